package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"strata/core/registry"
)

// Parse parses a config from memory. name is used in error messages and
// as Config.Path (relative paths in the config are relative to its
// directory). overrides are "key.path=value" settings applied on top of
// the file, as `strata train --set` passes them: the value is read as a
// TOML value when it is one (5, 0.1, true, "text", [1, 2]) and as a plain
// string otherwise (adam, embedded:cora); a string key always takes the
// text as given. Overrides go through the same checks as the file, and
// their errors name the override ("--set train.epochz=5: ...").
//
// Parse reports every problem it finds; the error is a single *Error or
// several joined with errors.Join, one per line, sorted by line.
func Parse(name string, data []byte, overrides ...string) (*Config, error) {
	lines, err := scanChecked(name, string(data))
	if err != nil {
		return nil, err
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, syntaxError(name, err)
	}
	if raw == nil {
		raw = map[string]any{}
	}
	src := newSource(name, "")
	for k, line := range lines {
		src.pos[k] = position{line: line}
	}
	return decodeRaw(raw, src, name, overrides)
}

// decodeRaw applies the overrides to a decoded TOML document and checks it
// into a Config named name; src locates the keys for errors.
func decodeRaw(raw map[string]any, src *source, name string, overrides []string) (*Config, error) {
	d := &decoder{src: src}
	for _, o := range overrides {
		if e := applyOverride(raw, src, o); e != nil {
			d.errs = append(d.errs, e)
		}
	}
	cfg := Default()
	cfg.Path = name
	cfg.src = src
	sections := takeStrategySections(raw)
	moved := d.moveKeys(raw, sections)
	topLevel := func(path []string, known []string) {
		d.unknownKey(path, append(known, slices.Sorted(maps.Keys(strategySections()))...))
	}
	d.table(nil, raw, reflect.ValueOf(cfg).Elem(), fieldsOf(configType), topLevel)
	d.strategy(cfg, sections, moved)
	optimizerDefaults(cfg, raw)
	d.check(cfg)
	if err := join(d.errs); err != nil {
		return nil, err
	}
	if cfg.Data.FeatureDType == "float32" {
		cfg.Data.FeatureDType = "" // the default, spelled out: the same config (and config_sha256)
	}
	if cfg.Train.Task == TaskNode {
		cfg.Train.Task = "" // likewise
	}
	return cfg, nil
}

// TaskNode, TaskRegression and TaskLink are the values of train.task
// ("" is TaskNode).
const (
	TaskNode       = "node"
	TaskRegression = "regression"
	TaskLink       = "link"
)

// weightDecayDefaulter is an optimizer module with a train.weight_decay
// default of its own (optimizer.adamw: PyTorch's 0.01).
type weightDecayDefaulter interface{ DefaultWeightDecay() float64 }

// optimizerDefaults gives train.weight_decay the default of the optimizer
// train.optimizer names when the config does not set it.
func optimizerDefaults(c *Config, raw map[string]any) {
	if t, ok := raw["train"].(map[string]any); ok {
		if _, set := t["weight_decay"]; set {
			return
		}
	}
	if info, err := registry.Lookup("optimizer." + c.Train.Optimizer); err == nil {
		if d, ok := info.New().(weightDecayDefaulter); ok {
			c.Train.WeightDecay = d.DefaultWeightDecay()
		}
	}
}

// randomSplitRE is the form of a generated split (graph.ParseRandomSplit).
var randomSplitRE = regexp.MustCompile(`^random-[0-9]+-[0-9]+-seed[0-9]+$`)

// syntaxError converts a TOML parse error to an *Error with the parser's
// line and column.
func syntaxError(file string, err error) error {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &Error{File: file, Msg: "TOML: " + err.Error()}
	}
	msg := "TOML syntax error: " + strings.TrimSpace(pe.Message)
	if pe.LastKey != "" {
		msg += fmt.Sprintf(" (after key %q)", pe.LastKey)
	}
	return &Error{File: file, Line: pe.Position.Line, Col: pe.Position.Col, Key: pe.LastKey, Msg: msg}
}

// applyOverride sets "key.path=value" in the raw TOML tree.
func applyOverride(raw map[string]any, src *source, arg string) *Error {
	loc := "--set " + arg
	keyText, val, ok := strings.Cut(arg, "=")
	if !ok {
		return &Error{Override: loc, Msg: "expected key=value, e.g. --set train.epochs=5"}
	}
	sc := &keyScanner{s: strings.TrimSpace(keyText), line: 1}
	path := sc.key()
	if !sc.eof() || len(path) == 0 || keyText == "" {
		return &Error{Override: loc, Msg: fmt.Sprintf("malformed key %q: expected a dotted key such as train.epochs", keyText)}
	}
	for _, p := range path {
		if p == "" {
			return &Error{Override: loc, Msg: fmt.Sprintf("malformed key %q: expected a dotted key such as train.epochs", keyText)}
		}
	}
	if len(path) > MaxNesting {
		return &Error{Override: loc, Msg: fmt.Sprintf("key has %d parts, more than the limit of %d", len(path), MaxNesting)}
	}
	ov := overrideValue{raw: val, parsed: val}
	var tmp map[string]any
	if _, err := scanChecked(loc, "v = "+val); err != nil {
		return &Error{Override: loc, Msg: fmt.Sprintf("value passes the limit of %d levels of nesting or %d bytes", MaxNesting, MaxConfigBytes)}
	} else if _, err := toml.Decode("v = "+val, &tmp); err == nil && len(tmp) == 1 {
		ov.parsed = tmp["v"]
	}
	dropOtherSpelling(raw, src, path)
	cur := raw
	for i, p := range path[:len(path)-1] {
		next, ok := cur[p]
		if !ok {
			m := map[string]any{}
			cur[p], cur = m, m
			src.setOverride(path[:i+1], loc)
			continue
		}
		if o, isOv := next.(overrideValue); isOv {
			next = o.parsed
		}
		m, isMap := next.(map[string]any)
		if !isMap {
			return &Error{Override: loc, Key: toml.Key(path).String(),
				Msg: fmt.Sprintf("cannot set %q: %q is not a table", toml.Key(path).String(), toml.Key(path[:i+1]).String())}
		}
		cur = m
	}
	cur[path[len(path)-1]] = ov
	src.setOverride(path, loc)
	return nil
}

// check runs the checks that involve more than one key or the registry.
func (d *decoder) check(c *Config) {
	if sp := c.Data.Split; sp != "" {
		switch i := strings.LastIndexByte(c.Data.Dataset, '@'); {
		case strings.ContainsAny(sp, `/\@`) || sp == "." || sp == "..":
			d.errorf([]string{"data", "split"}, "data.split = %q: want a split name such as \"public\" or random-<train>-<valid>-seed<k> (e.g. \"random-20-30-seed0\")", sp)
		case strings.HasPrefix(sp, "random") && !randomSplitRE.MatchString(sp):
			d.errorf([]string{"data", "split"}, "data.split = %q: a generated split is written random-<train>-<valid>-seed<k>, e.g. \"random-20-30-seed0\"", sp)
		case i > 0 && !strings.ContainsAny(c.Data.Dataset[i:], `/\`):
			d.errorf([]string{"data", "split"}, "data.split = %q but data.dataset = %q already names a split after '@'; set it in one place", sp, c.Data.Dataset)
		}
	}
	d.checkLink(c)
	if e, ok := c.Train.LRSchedule.Module.(interface{ CheckEpochs(int) error }); ok {
		if err := e.CheckEpochs(c.Train.Epochs); err != nil {
			d.errorf([]string{"train", "lr_schedule", "warmup_epochs"}, "train.lr_schedule.%v", err)
		}
	}
	m := &c.Model
	if m.Module == "" {
		if m.Name == "" {
			d.errorf([]string{"model", "name"}, "model.name must not be empty (or set model.module to a .wasm file)")
		} else if models := pluginNames("model"); len(models) > 0 {
			// Model modules are registered by the WASM host; without it
			// (a build or test that does not link it) train checks the name.
			if _, err := registry.Lookup("model." + m.Name); err != nil {
				msg := fmt.Sprintf("model.name = %q: unknown model", m.Name)
				if sug, ok := moduleAliasSuggestion("model", m.Name); ok {
					msg += " (" + sug + ")"
				} else if sug := registry.Suggest(m.Name, models); sug != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", sug)
				}
				d.errs = append(d.errs, d.src.errorAt([]string{"model", "name"}, msg+"; available: "+quoteList(models)+", or set model.module to a .wasm file"))
			}
		}
	} else if !strings.HasSuffix(m.Module, ".wasm") {
		d.errorf([]string{"model", "module"}, "model.module = %q: expected a path to a .wasm file", m.Module)
	}
}
