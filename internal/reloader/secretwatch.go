package reloader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The watch speaks plain JSON to /api/v1 and decodes only the fields it needs, which keeps
// client-go's typed clients and k8s.io/api out of the binary.

type objectMeta struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	ResourceVersion string `json:"resourceVersion"`
}

type secretObject struct {
	Metadata objectMeta `json:"metadata"`
	// encoding/json decodes the API's base64 strings into []byte.
	Data map[string][]byte `json:"data"`
}

type secretList struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []secretObject `json:"items"`
}

type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// apiStatus is the part of a metav1.Status the watch looks at.
type apiStatus struct {
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// APIError is a failed API request.
type APIError struct {
	Code    int
	Reason  string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("kubernetes API: %d %s: %s", e.Code, e.Reason, e.Message)
}

// errExpired means the watch's resourceVersion is too old; a fresh list fixes it.
var errExpired = errors.New("watch resourceVersion expired")

func isForbidden(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.Code == http.StatusForbidden
}

// secretWatch lists and watches one Secret and reports its configuration key as events
// for one document.
type secretWatch struct {
	api                  *APIClient
	namespace, name, key string
	// doc is the document the events are about; optional says it is a piece, for which
	// a missing Secret or key means the piece is absent rather than "ask the file".
	doc      int
	optional bool
	backoff  Backoff
	log      *slog.Logger
	events   chan<- event
	// minWatchTimeout is the shortest server-side timeout asked for; the actual one is
	// up to twice that, so a fleet of sidecars does not reconnect in lockstep.
	minWatchTimeout time.Duration
}

func (w *secretWatch) run(ctx context.Context) {
	var delay time.Duration
	forbiddenLogged := false
	for {
		rv, err := w.list(ctx)
		if err == nil {
			delay = 0
			forbiddenLogged = false
			err = w.watch(ctx, rv)
		}
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errExpired) {
			w.log.Debug("Secret watch expired, listing again", "err", err)
			continue
		}
		w.send(ctx, event{kind: evAPILost})
		delay = w.backoff.next(delay)
		switch {
		case !isForbidden(err):
			w.log.Warn("Secret watch failed, retrying", "secret", w.namespace+"/"+w.name, "retryIn", delay.String(), "err", err)
		case !forbiddenLogged:
			forbiddenLogged = true
			w.log.Warn("No permission to read the configuration Secret, relying on the mounted file", "secret", w.namespace+"/"+w.name, "err", err)
		default:
			w.log.Debug("Secret watch still forbidden", "secret", w.namespace+"/"+w.name, "retryIn", delay.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// list reports the Secret's current state and returns the resourceVersion to watch from.
func (w *secretWatch) list(ctx context.Context) (string, error) {
	resp, err := w.get(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("list Secret %s/%s: %w", w.namespace, w.name, err)
	}
	defer resp.Body.Close()
	var list secretList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return "", fmt.Errorf("list Secret %s/%s: decode: %w", w.namespace, w.name, err)
	}
	switch {
	case len(list.Items) == 0 && w.optional:
		// Normal for the pieces beyond the ones the configuration needs.
		w.log.Debug("Piece Secret not found, the piece is absent", "secret", w.namespace+"/"+w.name)
		w.send(ctx, event{kind: evAPIEmpty})
	case len(list.Items) == 0:
		w.log.Info("Configuration Secret not found, relying on the mounted file", "secret", w.namespace+"/"+w.name)
		w.send(ctx, event{kind: evAPIEmpty})
	default:
		w.deliver(ctx, &list.Items[0])
	}
	return list.Metadata.ResourceVersion, nil
}

// watch follows the Secret from rv, starting a new watch whenever the server ends one
// normally, until an error.
func (w *secretWatch) watch(ctx context.Context, rv string) error {
	for {
		var err error
		if rv, err = w.watchOnce(ctx, rv); err != nil {
			return err
		}
	}
}

func (w *secretWatch) watchOnce(ctx context.Context, rv string) (string, error) {
	timeout := w.minWatchTimeout + rand.N(w.minWatchTimeout+1)
	query := url.Values{
		"watch":               {"true"},
		"resourceVersion":     {rv},
		"allowWatchBookmarks": {"true"},
		"timeoutSeconds":      {strconv.Itoa(max(int(timeout.Seconds()), 1))},
	}
	// The server closes the stream after timeoutSeconds; the client-side deadline is the
	// backstop for a connection that died silently.
	wctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	resp, err := w.get(wctx, query)
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Code == http.StatusGone {
			return rv, errExpired
		}
		return rv, fmt.Errorf("watch Secret %s/%s: %w", w.namespace, w.name, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if errors.Is(err, io.EOF) || (wctx.Err() != nil && ctx.Err() == nil) {
				return rv, nil
			}
			return rv, fmt.Errorf("watch Secret %s/%s: read: %w", w.namespace, w.name, err)
		}
		switch ev.Type {
		case "ADDED", "MODIFIED", "DELETED", "BOOKMARK":
			var s secretObject
			if err := json.Unmarshal(ev.Object, &s); err != nil {
				return rv, fmt.Errorf("watch Secret %s/%s: decode %s event: %w", w.namespace, w.name, ev.Type, err)
			}
			if s.Metadata.ResourceVersion != "" {
				rv = s.Metadata.ResourceVersion
			}
			switch ev.Type {
			case "ADDED", "MODIFIED":
				w.deliver(ctx, &s)
			case "DELETED":
				if w.optional {
					w.log.Info("Piece Secret deleted, the piece is absent", "secret", w.namespace+"/"+w.name)
				} else {
					w.log.Warn("Configuration Secret deleted, keeping the last configuration", "secret", w.namespace+"/"+w.name)
				}
				w.send(ctx, event{kind: evAPIEmpty})
			}
		case "ERROR":
			var st apiStatus
			_ = json.Unmarshal(ev.Object, &st)
			if st.Code == http.StatusGone {
				return rv, errExpired
			}
			return rv, fmt.Errorf("watch Secret %s/%s: %w", w.namespace, w.name, &APIError{Code: st.Code, Reason: st.Reason, Message: st.Message})
		}
	}
}

// deliver decodes the configuration key of s into an event.
func (w *secretWatch) deliver(ctx context.Context, s *secretObject) {
	raw, ok := s.Data[w.key]
	if !ok {
		if w.optional {
			w.log.Warn("Piece Secret has no such key, the piece is absent", "secret", w.namespace+"/"+w.name, "key", w.key)
		} else {
			w.log.Warn("Configuration Secret has no such key, relying on the mounted file", "secret", w.namespace+"/"+w.name, "key", w.key)
		}
		w.send(ctx, event{kind: evAPIEmpty})
		return
	}
	config, err := decodeConfig(w.key, raw)
	if err != nil {
		w.log.Error("Cannot decode the configuration Secret", "secret", w.namespace+"/"+w.name, "resourceVersion", s.Metadata.ResourceVersion, "err", err)
		return
	}
	w.send(ctx, event{kind: evAPIValue, in: newInput(SourceAPI, config), resourceVersion: s.Metadata.ResourceVersion})
}

func (w *secretWatch) send(ctx context.Context, ev event) {
	ev.doc = w.doc
	select {
	case w.events <- ev:
	case <-ctx.Done():
	}
}

// get requests the Secret collection filtered to the one name, plus query.
func (w *secretWatch) get(ctx context.Context, query url.Values) (*http.Response, error) {
	q := url.Values{"fieldSelector": {"metadata.name=" + w.name}}
	for k, v := range query {
		q[k] = v
	}
	u := w.api.BaseURL + "/api/v1/namespaces/" + url.PathEscape(w.namespace) + "/secrets?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "lookout-reloader")
	if w.api.Token != nil {
		token, err := w.api.Token()
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := w.api.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	apiErr := &APIError{Code: resp.StatusCode, Reason: http.StatusText(resp.StatusCode), Message: string(body)}
	var st apiStatus
	if json.Unmarshal(body, &st) == nil && st.Message != "" {
		apiErr.Reason, apiErr.Message = st.Reason, st.Message
	}
	return nil, apiErr
}
