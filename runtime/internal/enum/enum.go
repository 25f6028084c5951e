// Package enum is the text form of the runtime's enums (runtime.Reason):
// the list of their values, their names in and out.
package enum

import "fmt"

// Enum is an enum whose values first, first+1, ... end-1 have names.
type Enum interface {
	~uint16
	String() string
}

// All lists the values from first up to end, end excluded.
func All[E Enum](first, end E) []E {
	es := make([]E, 0, end-first)
	for e := first; e < end; e++ {
		es = append(es, e)
	}
	return es
}

// Marshal is e's name when it is valid, else an error saying it is not
// one of what (for example "a dead-letter reason").
func Marshal[E Enum](e E, valid bool, what string) ([]byte, error) {
	if !valid {
		return nil, fmt.Errorf("ringactor: %v is not %s", e, what)
	}
	return []byte(e.String()), nil
}

// Parse is the value from first up to end named s, or an error saying
// it is not one of what, and that list lists them.
func Parse[E Enum](s string, first, end E, what, list string) (E, error) {
	for e := first; e < end; e++ {
		if e.String() == s {
			return e, nil
		}
	}
	return 0, fmt.Errorf("ringactor: %q is not %s; the reasons are listed in %s", s, what, list)
}

// Unmarshal sets *e to the value parse reads in b; on an error *e stays.
func Unmarshal[E Enum](e *E, b []byte, parse func(string) (E, error)) error {
	v, err := parse(string(b))
	if err == nil {
		*e = v
	}
	return err
}
