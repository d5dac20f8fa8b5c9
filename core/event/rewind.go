package event

// Phases of a file checkpoint.
const (
	// PhaseStart is taken as a turn starts: what a rewind to before the
	// turn restores.
	PhaseStart = "start"
	// PhaseEnd is taken as a turn ends: what changes between it and the
	// next start were made outside the agent.
	PhaseEnd = "end"
)

// Rewind scopes.
const (
	ScopeAll          = "all"
	ScopeFiles        = "files"
	ScopeConversation = "conversation"
)

// SnapshotRoot is one workspace root in a file snapshot: the root and the
// id of its manifest in the session's snapshot store.
type SnapshotRoot struct {
	Root     string `json:"root"`
	Manifest string `json:"manifest"`
	Files    int    `json:"files"`
}

// SkippedFile is a file a snapshot left out, and why (too large, store
// full, unreadable).
type SkippedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size,omitempty"`
	Reason string `json:"reason"`
}

// FileCheckpoint is the payload of checkpoint/files: a snapshot of the
// workspace roots, taken at a turn's start or end. Error says why none
// could be taken (the turn went on without it).
type FileCheckpoint struct {
	Turn    int            `json:"turn"`
	Phase   string         `json:"phase"`
	Roots   []SnapshotRoot `json:"roots,omitempty"`
	Skipped []SkippedFile  `json:"skipped,omitempty"`
	// SkippedCount is how many files were left out in all (Skipped lists
	// the first few).
	SkippedCount int    `json:"skippedCount,omitempty"`
	Error        string `json:"error,omitempty"`
	Millis       int64  `json:"ms"`
}

// FileChange is one file a rewind changed: op is create, modify or
// delete (of the workspace file).
type FileChange struct {
	Root string `json:"root"`
	Path string `json:"path"`
	Op   string `json:"op"`
}

// Rewind is the payload of session/rewind: the session went back to
// before Turn (or, with Undo, to just before the rewind at seq Undoes).
// Pre is the undo checkpoint (the files just before the rewind) and Post
// the files just after. With the conversation in scope, a
// compaction/checkpoint of trigger "rewind" follows in the same write,
// holding the model-facing history from here on.
type Rewind struct {
	ID     string `json:"id"`
	Turn   int    `json:"turn,omitempty"`
	Scope  string `json:"scope"`
	Undo   bool   `json:"undo,omitempty"`
	Undoes int64  `json:"undoes,omitempty"`
	// FromSeq is the first seq of the part of the conversation rewound
	// (turn Turn's turn/start); 0 for an undo or a files-only rewind.
	FromSeq      int64          `json:"fromSeq,omitempty"`
	RewoundTurns []int          `json:"rewoundTurns,omitempty"`
	Forced       bool           `json:"forced,omitempty"`
	Conflicts    []string       `json:"conflicts,omitempty"`
	Pre          []SnapshotRoot `json:"pre,omitempty"`
	Post         []SnapshotRoot `json:"post,omitempty"`
	Changes      []FileChange   `json:"changes,omitempty"`
	// ChangeCount is how many files changed in all (Changes lists the
	// first MaxListedChanges).
	ChangeCount int `json:"changeCount,omitempty"`
	// NotRestored are files the target snapshot did not capture (too
	// large, store full): left as they are.
	NotRestored []string `json:"notRestored,omitempty"`
}

// MaxListedChanges bounds the file lists of a session/rewind event.
const MaxListedChanges = 1000
