package checker

// A verdict is what one check concluded about one due pop under one
// guarantee, or about one write under G5: held strictly (no excuse), excused
// by a named allowance, or violated. The checks return verdicts as they
// judge, and the judged coverage is their tally (coverage.go): there is no
// second judgement that could drift from the first.
//
// An excused verdict names the allowance the check made for the pop
// whether or not it was used: a pop delivered on time inside a fault
// window still counts as excused, since a late or missing delivery would
// have been excused too. Coverage measures what the checker could catch.
type verdict struct {
	excuse   Excuse // why the check allowed more than the strict bound
	violated bool
}

// strictly is the verdict of a pop or write held to its guarantee with no
// allowance.
var strictly = verdict{}

func excused(e Excuse) verdict { return verdict{excuse: e} }

var violatedVerdict = verdict{violated: true}

// or combines two verdicts of one guarantee: a violation wins, then the
// first excuse.
func (v verdict) or(w verdict) verdict {
	switch {
	case v.violated || w.violated:
		return violatedVerdict
	case v.excuse != "":
		return v
	}
	return w
}

// The guarantees judged per due pop.
const (
	colG2 = iota
	colG3
	colG4
	popColumns
)

var columnName = [popColumns]string{"G2", "G3", "G4"}

// popKey names one pop of one definition.
type popKey struct {
	d *def
	k int
}

// popVerdicts holds the verdicts the checks gave one pop, per guarantee,
// and the violations they found about it (for the report).
type popVerdicts struct {
	v     [popColumns]verdict
	set   [popColumns]bool
	broke []Violation
}

// entry is the verdicts of pop k of d, made on first use.
func (x *index) entry(d *def, k int) *popVerdicts {
	key := popKey{d, k}
	pv := x.verdicts[key]
	if pv == nil {
		pv = &popVerdicts{}
		x.verdicts[key] = pv
	}
	return pv
}

// recordBroken keeps the violations a check found about pop k of d.
func (x *index) recordBroken(d *def, k int, vs ...Violation) {
	if len(vs) > 0 {
		pv := x.entry(d, k)
		pv.broke = append(pv.broke, vs...)
	}
}

// record adds what a check concluded about pop k of d under guarantee col.
func (x *index) record(d *def, k, col int, v verdict) {
	pv := x.entry(d, k)
	if pv.set[col] {
		v = pv.v[col].or(v)
	}
	pv.v[col], pv.set[col] = v, true
}

// recordWrite adds what a check concluded about op under G5.
func (x *index) recordWrite(op Op, v verdict) {
	if w, ok := x.writeVerdicts[op.Seq]; ok {
		v = w.or(v)
	}
	x.writeVerdicts[op.Seq] = v
}
