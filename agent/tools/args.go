package tools

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// schema is the part of JSON Schema that argument checking understands:
// an object with typed top-level properties, required names and whether
// other properties are allowed. Tools in this product keep their argument
// schemas that flat (DESIGN §6).
type schema struct {
	Type                 string                     `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties *bool                      `json:"additionalProperties"`
}

type propType struct {
	Type string `json:"type"`
}

// CheckArguments validates a model's raw argument text against the tool's
// schema. The error text is written for the model to read and correct.
func CheckArguments(t Tool, raw string) (json.RawMessage, error) {
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		return nil, fmt.Errorf("arguments are not a JSON object: %v", err)
	}
	var sc schema
	if len(t.Parameters) > 0 {
		if err := json.Unmarshal(t.Parameters, &sc); err != nil {
			return nil, fmt.Errorf("tool %s has an invalid schema: %v", t.Name, err)
		}
	}
	var problems []string
	for _, name := range sc.Required {
		if _, ok := args[name]; !ok {
			problems = append(problems, fmt.Sprintf("missing required argument %q", name))
		}
	}
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop, known := sc.Properties[name]
		if !known {
			if sc.AdditionalProperties != nil && !*sc.AdditionalProperties {
				problems = append(problems, fmt.Sprintf("unknown argument %q", name))
			}
			continue
		}
		var pt propType
		_ = json.Unmarshal(prop, &pt)
		if pt.Type != "" && !hasType(args[name], pt.Type) {
			problems = append(problems, fmt.Sprintf("argument %q must be of type %s", name, pt.Type))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid arguments for %s: %s", t.Name, strings.Join(problems, "; "))
	}
	return json.RawMessage(raw), nil
}

func hasType(v json.RawMessage, typ string) bool {
	s := strings.TrimSpace(string(v))
	if s == "" {
		return false
	}
	switch typ {
	case "string":
		return s[0] == '"'
	case "boolean":
		return s == "true" || s == "false"
	case "array":
		return s[0] == '['
	case "object":
		return s[0] == '{'
	case "null":
		return s == "null"
	case "integer":
		if s[0] == '"' { // json.Number would accept a quoted number
			return false
		}
		var n json.Number
		if json.Unmarshal(v, &n) != nil {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case "number":
		if s[0] == '"' {
			return false
		}
		var f float64
		return json.Unmarshal(v, &f) == nil
	}
	return true
}
