package agenttest

import (
	"context"
	"encoding/json"

	"github.com/agentplane/agentplane/agent/tools"
)

// EchoTool is tool "echo" in group "test": it returns "echo: " and its
// "text" argument.
func EchoTool() tools.Tool {
	return tools.Tool{
		Name: "echo", Description: "Echo the text back.", Group: "test",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
		Run: func(_ context.Context, c tools.Call) (string, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(c.Arguments, &a); err != nil {
				return "", err
			}
			return "echo: " + a.Text, nil
		},
	}
}
