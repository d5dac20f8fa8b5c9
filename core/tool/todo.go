package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

const todoSchema = `{"type":"object","properties":{"todos":{"type":"array","description":"The whole updated todo list, in order. It replaces the previous list.","items":{"type":"object","properties":{"content":{"type":"string","description":"The task, as a short imperative sentence."},"status":{"type":"string","enum":["pending","in_progress","completed"],"description":"pending, in_progress (one task at a time) or completed."}},"required":["content","status"],"additionalProperties":false}}},"required":["todos"],"additionalProperties":false}`

const todoDescription = `Write the todo list for the current task, shown to the user as a plan. Use it for work of three or more steps: send the whole list each time, mark a task in_progress when you start it and completed as soon as it is done.`

type todoTool struct{}

type todoArgs struct {
	Todos *[]event.Todo `json:"todos"`
}

func (todoTool) Name() string            { return "todo_write" }
func (todoTool) Description() string     { return todoDescription }
func (todoTool) Schema() json.RawMessage { return json.RawMessage(todoSchema) }
func (todoTool) Kind() Kind              { return KindExempt }
func (todoTool) ParallelSafe() bool      { return false }

func (todoTool) parse(args json.RawMessage) ([]event.Todo, error) {
	var a todoArgs
	if err := decodeArgs("todo_write", args, &a); err != nil {
		return nil, err
	}
	if a.Todos == nil {
		return nil, errors.New("invalid arguments for todo_write: todos is required (an empty array clears the list)")
	}
	todos := *a.Todos
	for i, t := range todos {
		if strings.TrimSpace(t.Content) == "" {
			return nil, fmt.Errorf("invalid arguments for todo_write: todos[%d].content is empty", i)
		}
		switch t.Status {
		case "pending", "in_progress", "completed":
		default:
			return nil, fmt.Errorf("invalid arguments for todo_write: todos[%d].status is %q; use pending, in_progress or completed", i, t.Status)
		}
	}
	return todos, nil
}

func (t todoTool) Inspect(args json.RawMessage, env *Env) (Access, error) {
	if _, err := t.parse(args); err != nil {
		return Access{}, err
	}
	return Access{Title: "Update the todo list"}, nil
}

func (t todoTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	todos, err := t.parse(args)
	if err != nil {
		return ErrorResult(err.Error())
	}
	meta := &event.ToolMeta{Kind: "think"}
	if env.Record == nil {
		return withMeta(ErrorResult("internal error: this session cannot record a todo list"), meta)
	}
	if todos == nil {
		todos = []event.Todo{}
	}
	if err := env.Record(event.New(event.TypeTodoWrite, event.TodoWrite{Turn: env.Turn, Todos: todos})); err != nil {
		return withMeta(ErrorResult(fmt.Sprintf("could not record the todo list: %v", err)), meta)
	}
	var pending, active, done int
	for _, t := range todos {
		switch t.Status {
		case "pending":
			pending++
		case "in_progress":
			active++
		default:
			done++
		}
	}
	return withMeta(TextResult(fmt.Sprintf("Todo list updated: %d pending, %d in progress, %d completed.", pending, active, done)), meta)
}
