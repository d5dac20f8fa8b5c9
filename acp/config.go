package acp

import (
	"fmt"
	"slices"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-dev/dsh/core"
	"github.com/dsh-dev/dsh/core/event"
)

// Config option ids. The order of configOptions is their priority.
const (
	optMode    = "mode"
	optModel   = "model"
	optThought = "thought_level"
	// effortDefault is the thought_level value for "the provider's
	// default" when the provider has no named default effort.
	effortDefault = "default"
)

// modes are the permission modes offered as ACP session modes.
var modes = []struct {
	id   core.PermissionMode
	name string
	desc string
}{
	{core.ModeReadOnly, "Read only", "Reads files; every write and command is refused."},
	{core.ModeAsk, "Ask", "Reads inside the workspace freely; asks before every other call."},
	{core.ModeAuto, "Auto", "Reads, writes and runs commands inside the workspace freely; asks for anything outside it."},
	{core.ModeFull, "Full access", "Runs every call without asking."},
}

func validMode(m string) bool {
	for _, x := range modes {
		if string(x.id) == m {
			return true
		}
	}
	return false
}

func modeState(current core.PermissionMode) *sdk.SessionModeState {
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(current)}
	for _, m := range modes {
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(m.id), Name: m.name, Description: sdk.Ptr(m.desc)})
	}
	return st
}

// modelIDs are the models offered: the configured list with the current
// model in it.
func (a *agent) modelIDs(current string) []string {
	ids := make([]string, 0, len(a.opts.Models)+2)
	for _, m := range append([]string{a.rt.Defaults().Model, current}, a.opts.Models...) {
		if m != "" && !slices.Contains(ids, m) {
			ids = append(ids, m)
		}
	}
	return ids
}

// efforts are the thought_level values of cfg's model and the current one;
// ok is false when the model has no reasoning efforts.
func (a *agent) efforts(cfg event.Config) (values []string, current string, ok bool) {
	prov, err := a.rt.Provider(cfg.Provider)
	if err != nil {
		return nil, "", false
	}
	caps := prov.Caps(cfg.Model)
	if len(caps.Efforts) == 0 {
		return nil, "", false
	}
	if caps.DefaultEffort == "" {
		values = append(values, effortDefault)
	}
	values = append(values, caps.Efforts...)
	current = cfg.ReasoningEffort
	if current == "" {
		current = caps.DefaultEffort
		if current == "" {
			current = effortDefault
		}
	}
	if !slices.Contains(values, current) {
		values = append([]string{current}, values...)
	}
	return values, current, true
}

// configOptions is the full option list of a session: mode, model and,
// when the model has them, reasoning efforts.
func (a *agent) configOptions(cfg event.Config, mode core.PermissionMode) []sdk.SessionConfigOption {
	var opts []sdk.SessionConfigOption

	modeVals := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(modes))
	for _, m := range modes {
		modeVals = append(modeVals, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m.id), Name: m.name, Description: sdk.Ptr(m.desc)})
	}
	opts = append(opts, selectOption(optMode, "Mode", "What runs without asking.", sdk.SessionConfigOptionCategoryMode, string(mode), modeVals))

	modelVals := sdk.SessionConfigSelectOptionsUngrouped{}
	for _, m := range a.modelIDs(cfg.Model) {
		modelVals = append(modelVals, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(m), Name: m})
	}
	opts = append(opts, selectOption(optModel, "Model", fmt.Sprintf("The %s model this session talks to.", cfg.Provider), sdk.SessionConfigOptionCategoryModel, cfg.Model, modelVals))

	if values, current, ok := a.efforts(cfg); ok {
		vals := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(values))
		for _, v := range values {
			name := v
			if v == effortDefault {
				name = "Provider default"
			}
			vals = append(vals, sdk.SessionConfigSelectOption{Value: sdk.SessionConfigValueId(v), Name: name})
		}
		opts = append(opts, selectOption(optThought, "Reasoning effort", "How much the model thinks before answering (off disables thinking).", sdk.SessionConfigOptionCategoryThoughtLevel, current, vals))
	}
	return opts
}

func selectOption(id, name, desc string, cat sdk.SessionConfigOptionCategory, current string, vals sdk.SessionConfigSelectOptionsUngrouped) sdk.SessionConfigOption {
	return sdk.SessionConfigOption{Select: &sdk.SessionConfigOptionSelect{
		Id: sdk.SessionConfigId(id), Name: name, Description: sdk.Ptr(desc), Category: sdk.Ptr(cat),
		CurrentValue: sdk.SessionConfigValueId(current), Options: sdk.SessionConfigSelectOptions{Ungrouped: &vals}, Type: "select",
	}}
}
