package node

// Store holds a node's timers by ID, in pop order. (Stub: being written.)
type Store struct{}

// NewStore returns an empty store whose wheel starts at now (ms).
func NewStore(now int64) *Store { panic("TODO") }

// Len returns the number of timers held.
func (s *Store) Len() int { panic("TODO") }

// Get returns the timer with the given ID, or nil.
func (s *Store) Get(id uint64) *Timer { panic("TODO") }

// Put inserts t due at due (ms), or moves it there if it is already held. A
// different timer held under t.ID is removed first.
func (s *Store) Put(t *Timer, due int64) { panic("TODO") }

// Remove removes and returns the timer with the given ID, or nil.
func (s *Store) Remove(id uint64) *Timer { panic("TODO") }

// PopDue removes every timer due at or before now and appends them to buf
// in nondecreasing due order.
func (s *Store) PopDue(now int64, buf []*Timer) []*Timer { panic("TODO") }

// NextDue returns the earliest due time held.
func (s *Store) NextDue() (int64, bool) { panic("TODO") }

// Ascend calls fn for each timer in nondecreasing due order until fn
// returns false. fn must not modify the store.
func (s *Store) Ascend(fn func(*Timer) bool) { panic("TODO") }
