package sdkrpc

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/dsh-dev/dsh/core/event"
)

// The door forwards committed events as the log holds them, but a frame
// must stay under every host's line cap: our own client reads up to 64
// MiB, Go hosts on bufio.Scanner often 10 MiB. A model that writes a 12
// MiB file makes a 12 MiB assistant/message and tool/call (the content is
// in the call's arguments), so an event whose data is over maxEventData is
// forwarded with its long strings cut to their head and a note of their
// size; the session log keeps the whole event (dsh sessions show, or a
// host reading the log).
const (
	maxEventData   = 8 << 20
	maxEventString = 64 << 10
)

// boundEvent returns ev, or a copy whose data fits maxEventData.
func boundEvent(ev event.Event) event.Event {
	if len(ev.Data) <= maxEventData {
		return ev
	}
	var v any
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		return ev // written by us, so valid; never refuse to forward
	}
	data, err := json.Marshal(cutStrings(v))
	if err != nil || len(data) > maxEventData {
		data, _ = json.Marshal(map[string]string{"truncated": fmt.Sprintf("the %s event of %d bytes is too large to forward; the session log has it", ev.Type, len(ev.Data))})
	}
	ev.Data = data
	return ev
}

// cutStrings shortens the long strings in a decoded JSON value.
func cutStrings(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > maxEventString {
			head := x[:maxEventString]
			for len(head) > 0 && !utf8.ValidString(head) {
				head = head[:len(head)-1]
			}
			return fmt.Sprintf("%s\n[... %d more bytes not forwarded; the session log has them ...]", head, len(x)-len(head))
		}
	case []any:
		for i := range x {
			x[i] = cutStrings(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = cutStrings(x[k])
		}
	}
	return v
}
