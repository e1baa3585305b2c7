package llm

import (
	"maps"
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// assembler accumulates one stream's chunks into a Response.
type assembler struct {
	content   strings.Builder
	calls     map[int]*ToolCall
	lastIndex int
	finish    string
	model     string
	usage     Usage
	chunks    int
	delivered bool
}

func (a *assembler) add(chunk openai.ChatCompletionStreamResponse, onDelta func(string)) {
	a.chunks++
	if chunk.Model != "" {
		a.model = chunk.Model
	}
	if u := chunk.Usage; u != nil {
		a.usage = Usage{
			InputTokens:  int64(u.PromptTokens),
			OutputTokens: int64(u.CompletionTokens),
			TotalTokens:  int64(u.TotalTokens),
		}
		if u.PromptTokensDetails != nil {
			a.usage.CacheReadTokens = int64(u.PromptTokensDetails.CachedTokens)
		}
		if a.usage.TotalTokens == 0 {
			a.usage.TotalTokens = a.usage.InputTokens + a.usage.OutputTokens
		}
	}
	for _, choice := range chunk.Choices {
		if choice.Index != 0 {
			continue // only one choice is ever requested
		}
		if d := choice.Delta.Content; d != "" {
			a.content.WriteString(d)
			if onDelta != nil {
				onDelta(d)
				a.delivered = true
			}
		}
		for _, frag := range choice.Delta.ToolCalls {
			a.addFragment(frag)
		}
		if r := string(choice.FinishReason); r != "" && r != string(openai.FinishReasonNull) {
			a.finish = r
		}
	}
}

// addFragment merges a tool-call fragment into the call at its index.
// Servers that omit the index get one: a fragment with a new id starts a
// call, one without continues the last.
func (a *assembler) addFragment(frag openai.ToolCall) {
	if a.calls == nil {
		a.calls = make(map[int]*ToolCall)
	}
	idx := a.lastIndex
	switch {
	case frag.Index != nil:
		idx = *frag.Index
	case len(a.calls) == 0:
		idx = 0
	case frag.ID != "" && a.calls[idx].ID != "" && frag.ID != a.calls[idx].ID:
		idx = slices.Max(slices.Collect(maps.Keys(a.calls))) + 1
	}
	a.lastIndex = idx
	call := a.calls[idx]
	if call == nil {
		call = &ToolCall{}
		a.calls[idx] = call
	}
	if call.ID == "" {
		call.ID = frag.ID
	}
	if call.Name == "" {
		call.Name = frag.Function.Name
	}
	call.Arguments += frag.Function.Arguments
}

func (a *assembler) response() Response {
	r := Response{
		Content:      a.content.String(),
		FinishReason: a.finish,
		Model:        a.model,
		Usage:        a.usage,
	}
	for _, k := range slices.Sorted(maps.Keys(a.calls)) {
		r.ToolCalls = append(r.ToolCalls, *a.calls[k])
	}
	return r
}
