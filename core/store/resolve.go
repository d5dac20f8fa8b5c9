package store

import (
	"fmt"
	"sort"
	"strings"
)

// AmbiguousError is a session id prefix that names more than one session.
type AmbiguousError struct {
	Prefix  string
	Matches []string // sorted, at most maxMatches
	More    int      // matches beyond Matches
}

const maxMatches = 5

// mintedPrefix starts every id dsh mints (core.NewSessionID); hosts may
// choose other ids.
const mintedPrefix = "session-"

func (e *AmbiguousError) Error() string {
	s := fmt.Sprintf("session id prefix %q names %d sessions: %s", e.Prefix, len(e.Matches)+e.More, strings.Join(e.Matches, ", "))
	if e.More > 0 {
		s += fmt.Sprintf(" and %d more", e.More)
	}
	return s + "; give more of the id"
}

// Resolve returns the id of the session named by idOrPrefix: the session
// with exactly that id, else the only session whose id, or the hex part of
// a minted id (after "session-"), starts with it. No match is ErrNotFound;
// several are an *AmbiguousError. A person at a terminal types the first
// characters of the id they see, as with git revisions: `4dff` as well as
// `session-4dff`.
func (s *Store) Resolve(idOrPrefix string) (string, error) {
	if idOrPrefix == "" {
		return "", fmt.Errorf("store: empty session id: %w", ErrNotFound)
	}
	if _, err := s.find(idOrPrefix); err == nil {
		return idOrPrefix, nil
	}
	infos, err := s.List("")
	if err != nil {
		return "", err
	}
	var matches []string
	for _, in := range infos {
		if strings.HasPrefix(in.Header.ID, idOrPrefix) || strings.HasPrefix(strings.TrimPrefix(in.Header.ID, mintedPrefix), idOrPrefix) {
			matches = append(matches, in.Header.ID)
		}
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("store: no session %q: %w", idOrPrefix, ErrNotFound)
	case 1:
		return matches[0], nil
	}
	sort.Strings(matches)
	e := &AmbiguousError{Prefix: idOrPrefix, Matches: matches}
	if len(matches) > maxMatches {
		e.Matches, e.More = matches[:maxMatches], len(matches)-maxMatches
	}
	return "", e
}

// Latest returns the most recently updated session recorded for cwd that a
// person would continue: not a subagent's child. None is ErrNotFound.
func (s *Store) Latest(cwd string) (Info, error) {
	infos, err := s.List(cwd)
	if err != nil {
		return Info{}, err
	}
	for _, in := range infos {
		if !in.Header.Delegated() {
			return in, nil
		}
	}
	return Info{}, fmt.Errorf("store: no session recorded for %s: %w", cwd, ErrNotFound)
}
