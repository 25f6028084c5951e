package directory

import (
	"errors"
	"sync"
)

// ErrNameTaken: a pipeline of that name exists (or is being built).
var ErrNameTaken = errors.New("name taken")

// ErrClosed: the directory was closed while the pipeline was being built.
var ErrClosed = errors.New("closed")

// Directory holds pipelines of type P by name, and claimed roles of type
// R. Its zero value is ready; it is safe for concurrent use.
type Directory[P any, R comparable] struct {
	mu     sync.Mutex
	names  map[string]*P // nil while the pipeline is being built
	roles  map[R]bool
	closed bool
}

// Claim takes name for a pipeline about to be built, or returns
// ErrNameTaken.
func (d *Directory[P, R]) Claim(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.names[name]; ok {
		return ErrNameTaken
	}
	if d.names == nil {
		d.names = map[string]*P{}
	}
	d.names[name] = nil
	return nil
}

// Built records that the pipeline that claimed name is built, so Open
// lists it. It returns ErrClosed once Close has run: Close may have
// listed the open pipelines already, so the caller tears p down.
func (d *Directory[P, R]) Built(name string, p *P) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.names[name] = p
	return nil
}

// Release gives name back (a failed build, or a closed pipeline).
func (d *Directory[P, R]) Release(name string) {
	d.mu.Lock()
	delete(d.names, name)
	d.mu.Unlock()
}

// Open lists the pipelines built and not yet released.
func (d *Directory[P, R]) Open() []*P {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ps []*P
	for _, p := range d.names {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// Close makes every later Built fail, and returns the pipelines open now.
func (d *Directory[P, R]) Close() []*P {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return d.Open()
}

// ClaimRole takes role for one user: false if it is taken already;
// release gives it back.
func (d *Directory[P, R]) ClaimRole(role R) (release func(), ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.roles[role] {
		return func() {}, false
	}
	if d.roles == nil {
		d.roles = map[R]bool{}
	}
	d.roles[role] = true
	return func() {
		d.mu.Lock()
		delete(d.roles, role)
		d.mu.Unlock()
	}, true
}
