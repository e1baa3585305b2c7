package llmtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Server is a scripted OpenAI-compatible endpoint. The zero value is not
// usable; call [NewServer] or [Start].
type Server struct {
	mu       sync.Mutex
	queue    []Reply
	rules    []*ruleState
	requests []ChatRequest
	noRecord bool

	demo      []Rule
	seq       atomic.Int64
	served    atomic.Int64
	done      chan struct{}
	closeOnce sync.Once
	url       string
}

type ruleState struct {
	Rule
	used int
}

// NewServer returns a server with an empty script: every request gets the
// [DemoRules] behaviour until replies are enqueued or rules added.
func NewServer() *Server {
	return &Server{demo: DemoRules(), done: make(chan struct{})}
}

// Start serves a new Server on a local listener until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := NewServer()
	hs := httptest.NewServer(s.Handler())
	s.url = hs.URL + "/v1"
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return s
}

// URL is the API base URL (ending in "/v1") of a server from [Start].
func (s *Server) URL() string { return s.url }

// Close ends every pending Delay and ChunkDelay so in-flight requests
// finish at once. Idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}

// Handler serves POST /v1/chat/completions and GET /v1/models (also
// without the /v1 prefix).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, prefix := range []string{"/v1", ""} {
		mux.HandleFunc("POST "+prefix+"/chat/completions", s.chat)
		mux.HandleFunc("GET "+prefix+"/models", s.models)
	}
	return mux
}

// Enqueue appends replies that the next requests receive, in order,
// before any rule is consulted.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// AddRule appends a rule; rules are tried in the order added.
func (s *Server) AddRule(r Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &ruleState{Rule: r})
}

// Requests returns the chat requests received so far, in arrival order.
func (s *Server) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.requests...)
}

// Served counts chat requests answered, recorded or not.
func (s *Server) Served() int64 { return s.served.Load() }

// DisableRecording stops keeping requests, for long-running demo servers
// and load tests where they would only grow memory.
func (s *Server) DisableRecording() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRecord = true
	s.requests = nil
}

// pick records req and chooses its reply: queue, then rules, then demo.
// Match runs under the lock (it decides a rule's Times); Respond runs
// after, so neither may call back into the Server while matching.
func (s *Server) pick(req ChatRequest) Reply {
	rule := s.match(req)
	if rule == nil {
		return Reply{Content: "OK."}
	}
	return rule.reply(req)
}

func (s *Server) match(req ChatRequest) *Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.noRecord {
		s.requests = append(s.requests, req)
	}
	if len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		return &Rule{Reply: r}
	}
	for _, r := range s.rules {
		if (r.Times == 0 || r.used < r.Times) && (r.Match == nil || r.Match(req)) {
			r.used++
			return &r.Rule
		}
	}
	for i := range s.demo {
		if s.demo[i].Match(req) {
			return &s.demo[i]
		}
	}
	return nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	req, err := decodeRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	req.APIKey = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	reply := s.pick(req)
	s.served.Add(1)
	s.respond(w, r, req, reply)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []model{{
		ID: DefaultModel, Object: "model", Created: 1700000000, OwnedBy: "agentplane",
	}}})
}
