package core

import (
	"slices"
	"strings"

	"github.com/dsh-dev/dsh/core/event"
)

// TurnInfo describes one turn of a session, for a rewind's choice.
type TurnInfo struct {
	Turn   int    `json:"turn"`
	Seq    int64  `json:"seq"`    // seq of its turn/start
	Prompt string `json:"prompt"` // the text of its first prompt, cut to one line
	// Rewound: a rewind took the turn out of the conversation.
	Rewound bool `json:"rewound"`
	// Files: a snapshot of the workspace at its start exists, so a rewind
	// to before it can restore files.
	Files bool `json:"files"`
	// from is where a rewind to before the turn starts hiding: the
	// receipt of its prompt when that came after the previous turn ended,
	// else its turn/start.
	from int64
}

// seqRange is the seqs [from, to).
type seqRange struct{ from, to int64 }

// RewoundSet says which events a rewind took out of the conversation: the
// doors leave them out when they replay a session, and the model never
// sees them again.
type RewoundSet struct{ ranges []seqRange }

// Hidden reports whether the event at seq was rewound.
func (r *RewoundSet) Hidden(seq int64) bool {
	for _, x := range r.ranges {
		if seq >= x.from && seq < x.to {
			return true
		}
	}
	return false
}

// Empty reports whether nothing was rewound.
func (r *RewoundSet) Empty() bool { return len(r.ranges) == 0 }

// Rewound folds the session/rewind events of a transcript: a rewind
// hides the turns from the one it went back to; an undo brings back what
// was hidden before the rewind it undoes and hides everything since.
func Rewound(events []event.Event) *RewoundSet {
	set := &RewoundSet{}
	before := map[int64][]seqRange{}
	for _, ev := range events {
		if ev.Type != event.TypeRewind {
			continue
		}
		rw, err := event.Decode[event.Rewind](ev)
		if err != nil || rw.Scope == event.ScopeFiles {
			continue
		}
		if rw.Undo {
			if prev, ok := before[rw.Undoes]; ok {
				set.ranges = append(slices.Clone(prev), seqRange{rw.Undoes, ev.Seq})
			}
			continue
		}
		before[ev.Seq] = slices.Clone(set.ranges)
		set.ranges = append(set.ranges, seqRange{rw.FromSeq, ev.Seq})
	}
	return set
}

// mark is one snapshot of the workspace in the session's history. A
// "start" mark begins the agent's own work (a turn, a rewind); an "end"
// mark ends it, so what changed between an end and the next start was
// changed outside the agent.
type snapMark struct {
	seq   int64
	phase string
	roots map[string]string // root → manifest
}

func rootMap(rs []event.SnapshotRoot) map[string]string {
	m := make(map[string]string, len(rs))
	for _, r := range rs {
		m[r.Root] = r.Manifest
	}
	return m
}

// timeline is what a rewind needs to know of a transcript.
type timeline struct {
	turns   []TurnInfo
	starts  map[int]int // turn → index in marks of its start snapshot
	errs    map[int]string
	marks   []snapMark
	rewinds []rewindAt
	hidden  *RewoundSet
}

type rewindAt struct {
	seq  int64
	rw   event.Rewind
	mark int // index in marks of its pre snapshot (-1: none)
}

func scanTimeline(events []event.Event) *timeline {
	tl := &timeline{starts: map[int]int{}, errs: map[int]string{}, hidden: Rewound(events)}
	open := -1           // index in turns of the turn whose prompt is not yet seen
	receipt := int64(-1) // the first prompt receipt since the last turn ended
	for _, ev := range events {
		switch ev.Type {
		case event.TypeInboxSpliced:
			if receipt < 0 {
				if d, err := event.Decode[event.InboxSpliced](ev); err == nil && len(d.Inserted) > 0 {
					receipt = ev.Seq
				}
			}
		case event.TypeTurnEnd:
			receipt = -1
		case event.TypeTurnStart:
			if d, err := event.Decode[event.TurnStart](ev); err == nil {
				from := ev.Seq
				if receipt >= 0 {
					from = receipt
				}
				tl.turns = append(tl.turns, TurnInfo{Turn: d.Turn, Seq: ev.Seq, Rewound: tl.hidden.Hidden(ev.Seq), from: from})
				open = len(tl.turns) - 1
			}
			receipt = -1
		case event.TypeUserMessage:
			if open >= 0 {
				if m, err := event.Decode[event.Message](ev); err == nil {
					tl.turns[open].Prompt = oneLine(event.JoinText(m.Content))
				}
				open = -1
			}
		case event.TypeFileCheckpoint:
			fc, err := event.Decode[event.FileCheckpoint](ev)
			if err != nil {
				continue
			}
			if fc.Error != "" || len(fc.Roots) == 0 {
				if fc.Phase == event.PhaseStart {
					tl.errs[fc.Turn] = fc.Error
				}
				continue
			}
			if fc.Phase == event.PhaseStart {
				tl.starts[fc.Turn] = len(tl.marks)
			}
			tl.marks = append(tl.marks, snapMark{seq: ev.Seq, phase: fc.Phase, roots: rootMap(fc.Roots)})
		case event.TypeRewind:
			rw, err := event.Decode[event.Rewind](ev)
			if err != nil {
				continue
			}
			at := rewindAt{seq: ev.Seq, rw: rw, mark: -1}
			if len(rw.Pre) > 0 {
				at.mark = len(tl.marks)
				tl.marks = append(tl.marks, snapMark{seq: ev.Seq, phase: event.PhaseStart, roots: rootMap(rw.Pre)})
				tl.marks = append(tl.marks, snapMark{seq: ev.Seq, phase: event.PhaseEnd, roots: rootMap(rw.Post)})
			}
			tl.rewinds = append(tl.rewinds, at)
		}
	}
	for i := range tl.turns {
		_, tl.turns[i].Files = tl.starts[tl.turns[i].Turn]
	}
	return tl
}

func (tl *timeline) turn(n int) (TurnInfo, bool) {
	for _, t := range tl.turns {
		if t.Turn == n {
			return t, true
		}
	}
	return TurnInfo{}, false
}

// oneLine is the first line of s, cut to 80 characters.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

// Turns lists the session's turns, oldest first, with their first prompt
// and whether a rewind took them out.
func (s *Session) Turns() ([]TurnInfo, error) {
	evs, err := s.Transcript()
	if err != nil {
		return nil, err
	}
	return scanTimeline(evs).turns, nil
}
