// Command tempering runs replica exchange (parallel tempering) of a 2-D
// Ising model, the PRISM report's workload, with the replicas as stateful
// ring kernels spread round-robin over the devices.
//
// Each of -replicas replicas is a one-stage pipeline on device k mod D
// whose stage runs the user op metropolis (ising.go: a CUDA source and
// its Go reference, registered with kernels.Register): the stage's state
// holds the replica's L×L lattice; a message asks for -sweeps Metropolis
// sweeps at an inverse temperature (as its acceptance table, exp(-4β) and
// exp(-8β) computed on the host) under a seed, and the stage answers with
// the energy, the magnetisation and the flips. The temperatures β_0 <
// ... < β_{K-1} run from -beta-min to -beta-max, evenly spaced.
//
// The exchange is actor messages. A replica actor per replica owns its
// stage's PID and the temperature it runs at; a coordinator actor runs
// the rounds. In a round the coordinator sends every replica a sweep;
// each replica requests its stage (a Data request to the stage's PID,
// answered with the Result) and reports the energy back. Once every
// replica has reported (the barrier), the coordinator decides, for the
// neighbouring temperatures t, t+1 of the round's pairs (even rounds
// (0,1), (2,3), ...; odd rounds (1,2), (3,4), ...), whether they swap,
// accepting with probability min(1, exp((β_t-β_{t+1})(E_a-E_b))) from
// its own seeded generator, and tells the two replicas of an accepted
// swap their new temperatures (an exchange message each) before the next
// round's sweeps.
//
// Everything random comes from -seed: the sweeps' seeds are a hash of
// (seed, round, replica), the swap draws a generator seeded with it. A
// single-goroutine reference then runs the same algorithm with the same
// seed (the op's Go function on lattices of its own) and the run is
// checked against it: every replica's energy, magnetisation and flips in
// every round and every swap decision. It prints the acceptance rate of
// each pair of neighbouring temperatures, each temperature's mean energy,
// a digest of the trajectory (the same seed gives the same digest, on
// every backend), and the mismatches, 0 or the exit status is 1.
//
//	go run ./examples/tempering -backend sim
//	make emu && RINGACTOR_LIBCUDA=$PWD/.emu/libcudaemu.so RINGACTOR_EMU_DEVICES=4 \
//	    go run ./examples/tempering -backend cuda   # the emulated driver, no GPU (NVRTC needed)
//	go run ./examples/tempering -replicas 12 -size 24 -rounds 400 -sweeps 5 -seed 7
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	ra "github.com/ringactor/ringactor/runtime"
)

type options struct {
	backend  string // auto, sim or cuda
	replicas int
	size     int // L
	rounds   int
	sweeps   int // per round
	seed     uint64
	devices  int // 0: every GPU of the backend
	betaMin  float64
	betaMax  float64
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "auto", "auto, sim or cuda (auto: the GPUs when the CUDA backend runs them, else simulated devices)")
	flag.IntVar(&o.replicas, "replicas", 8, "replicas, one per temperature (2 to 64)")
	flag.IntVar(&o.size, "size", 16, "lattice side L (3 to 64): L×L spins, periodic")
	flag.IntVar(&o.rounds, "rounds", 200, "exchange rounds")
	flag.IntVar(&o.sweeps, "sweeps", 10, "Metropolis sweeps per replica per round")
	flag.Uint64Var(&o.seed, "seed", 1, "the seed of everything random")
	flag.IntVar(&o.devices, "devices", 0, "devices the replicas are spread over (0: every GPU of the backend)")
	flag.Float64Var(&o.betaMin, "beta-min", 0.3, "the smallest inverse temperature")
	flag.Float64Var(&o.betaMax, "beta-max", 0.55, "the largest inverse temperature")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if _, err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tempering:", err)
		os.Exit(1)
	}
}

// obs is one replica's answer in one round.
type obs struct {
	Temp     int // the temperature it ran at
	E, M     float32
	Flips    float32
	Replica  int
	Received bool
}

// decision is one swap attempt: temperatures T and T+1, held by replicas
// A and B before it.
type decision struct {
	Round, T, A, B int
	Accepted       bool
}

// record is a run's trajectory: Obs[round][replica] and every decision.
type record struct {
	Obs       [][]obs
	Decisions []decision
}

// summary is what run returns (the test reads it).
type summary struct {
	Backend    string
	Devices    []int
	Betas      []float64
	Pairs      []pairStat
	Digest     uint64
	Mismatches int
	Record     record
}

type pairStat struct {
	T                  int
	Attempts, Accepted int
}

// betas are the temperatures, evenly spaced from lo to hi.
func betas(k int, lo, hi float64) []float64 {
	bs := make([]float64, k)
	for i := range bs {
		bs[i] = lo + (hi-lo)*float64(i)/float64(k-1)
	}
	return bs
}

// sweepSeed is replica's seed in round: a hash of (seed, round, replica),
// a whole number below 2^24 (it travels as a float32).
func sweepSeed(seed uint64, round, replica int) float32 {
	z := seed ^ uint64(round)<<24 ^ uint64(replica)<<52
	z += 0x9e3779b97f4a7c15 // splitmix64
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return float32(z & (1<<24 - 1))
}

// ladder is the coordinator's side of the exchange, the same in the
// actor run and in the reference: who holds which temperature, and the
// swap generator.
type ladder struct {
	betas []float64
	who   []int // who[t]: the replica at temperature t
	rng   *rand.Rand
}

func newLadder(bs []float64, seed uint64) *ladder {
	l := &ladder{betas: bs, who: make([]int, len(bs)), rng: rand.New(rand.NewPCG(seed, 0x7e3a))}
	for t := range l.who {
		l.who[t] = t
	}
	return l
}

// exchange decides round's swaps from the replicas' energies (by replica)
// and applies them to who.
func (l *ladder) exchange(round int, energy func(replica int) float32) []decision {
	var ds []decision
	for t := round % 2; t+1 < len(l.betas); t += 2 {
		a, b := l.who[t], l.who[t+1]
		delta := (l.betas[t] - l.betas[t+1]) * float64(energy(a)-energy(b))
		u := l.rng.Float64()
		acc := delta >= 0 || u < math.Exp(delta)
		if acc {
			l.who[t], l.who[t+1] = b, a
		}
		ds = append(ds, decision{Round: round, T: t, A: a, B: b, Accepted: acc})
	}
	return ds
}

// message is the data a replica's stage gets in a round.
func message(o options, beta float64, round, replica int) []float32 {
	p4, p8 := acceptance(beta)
	return []float32{p4, p8, sweepSeed(o.seed, round, replica), float32(o.sweeps)}
}

func (o options) check() error {
	switch {
	case o.replicas < 2 || o.replicas > 64:
		return fmt.Errorf("-replicas %d: want 2 to 64", o.replicas)
	case o.size < 3 || o.size > maxSize:
		return fmt.Errorf("-size %d: want 3 to %d", o.size, maxSize)
	case o.rounds < 1 || o.rounds > 1<<20:
		return fmt.Errorf("-rounds %d: want 1 to %d", o.rounds, 1<<20)
	case o.sweeps < 1 || o.sweeps*o.size*o.size >= 1<<24:
		return fmt.Errorf("-sweeps %d: want at least 1 and sweeps·L² below 2^24", o.sweeps)
	case o.devices < 0:
		return fmt.Errorf("-devices %d: want 0 (all) or more", o.devices)
	case !(o.betaMin > 0 && o.betaMin < o.betaMax && o.betaMax < 10):
		return fmt.Errorf("-beta-min %v, -beta-max %v: want 0 < min < max < 10", o.betaMin, o.betaMax)
	}
	return nil
}

func run(ctx context.Context, o options, w io.Writer) (summary, error) {
	if err := o.check(); err != nil {
		return summary{}, err
	}
	if err := register(); err != nil {
		return summary{}, err
	}
	rt, err := newRuntime(o.backend)
	if err != nil {
		return summary{}, err
	}
	defer rt.Close()
	return runOn(ctx, rt, o, w)
}

// newRuntime is the runtime of -backend (four simulated GPUs on sim).
func newRuntime(backend string) (*ra.Runtime, error) {
	return ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: backend, SimDevices: 4}})
}

// runOn is one run on rt (which it leaves open: a run closes everything
// it builds, so another may follow on the same runtime).
func runOn(ctx context.Context, rt *ra.Runtime, o options, w io.Writer) (summary, error) {
	if err := o.check(); err != nil {
		return summary{}, err
	}
	if err := register(); err != nil {
		return summary{}, err
	}
	reg := rt.Registry()
	gpus := reg.GPUs()
	nd := o.devices
	if nd == 0 {
		nd = len(gpus)
	}
	if nd < 1 || nd > len(gpus) {
		return summary{}, fmt.Errorf("-devices %d: the %s backend has %d GPUs (RINGACTOR_EMU_DEVICES sets the emulated driver's)", o.devices, reg.BackendName(), len(gpus))
	}
	devs := make([]int, nd)
	for i := range devs {
		devs[i] = gpus[i].ID
	}
	sum := summary{Backend: reg.BackendName(), Devices: devs, Betas: betas(o.replicas, o.betaMin, o.betaMax)}

	// The replicas' stages: one stateful stage each, round-robin over the
	// devices.
	var dead atomic.Int64
	pipes := make([]*ra.Pipeline, o.replicas)
	stagePIDs := make([]*actor.PID, o.replicas)
	defer func() {
		for _, p := range pipes {
			if p != nil {
				p.Close(context.Background(), false)
			}
		}
	}()
	for k := range pipes {
		p, err := rt.Build(ctx, ra.PipelineSpec{Name: fmt.Sprintf("replica%d", k),
			Stages:       []ra.StageSpec{{Name: "metropolis", Op: opName, Params: []float32{float32(o.size)}, Device: devs[k%nd], Stateful: true, Capacity: 4}},
			OnDeadLetter: func(ra.DeadLetter) { dead.Add(1) }})
		if err != nil {
			return sum, err
		}
		pipes[k] = p
		if err := p.Start(ctx); err != nil {
			return sum, err
		}
		if stagePIDs[k], err = p.PID("metropolis"); err != nil {
			return sum, err
		}
	}

	start := time.Now()
	rec, err := exchangeRun(ctx, rt, o, sum.Betas, stagePIDs)
	if err != nil {
		return sum, err
	}
	elapsed := time.Since(start)
	for k, p := range pipes {
		if err := p.Close(ctx, true); err != nil {
			return sum, err
		}
		if st := p.Stats(); st.Sent != uint64(o.rounds) || st.Delivered != uint64(o.rounds) || st.DeadLettered != 0 || st.InFlight != 0 {
			return sum, fmt.Errorf("replica %d's pipeline: account %+v, want %d messages delivered", k, st, o.rounds)
		}
	}
	if n := dead.Load(); n != 0 {
		return sum, fmt.Errorf("%d dead letters", n)
	}
	sum.Record = rec

	// The reference, in this goroutine, and the check.
	ref, err := reference(o, sum.Betas)
	if err != nil {
		return sum, err
	}
	sum.Mismatches = compare(rec, ref, w)
	sum.Digest = digest(rec)
	sum.Pairs = pairs(o.replicas, rec)
	report(w, o, sum, elapsed)
	if sum.Mismatches != 0 {
		return sum, fmt.Errorf("%d mismatches against the reference", sum.Mismatches)
	}
	return sum, nil
}

// The actors' messages.
type (
	// begin starts the rounds (sent to the coordinator with a future, which
	// is answered with the record or an error).
	begin struct{}
	// sweep asks a replica for round's sweeps.
	sweep struct{ Round int }
	// measured is a replica's report of a round.
	measured struct {
		Round int
		Obs   obs
	}
	// exchange gives a replica its new temperature after round's swaps.
	exchange struct{ Round, Temp int }
	// failed is a replica's request that came back dead.
	failed struct {
		Replica, Round int
		Err            error
	}
)

// replicaActor holds one replica's stage and the temperature it runs at.
type replicaActor struct {
	id    int
	o     options
	betas []float64
	stage *actor.PID
	coord *actor.PID
	temp  int
	round int
}

func (r *replicaActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case sweep:
		r.coord, r.round = c.Sender(), m.Round
		c.Request(r.stage, ra.Data{Floats: message(r.o, r.betas[r.temp], m.Round, r.id)})
	case exchange:
		r.temp = m.Temp
	case ra.Result:
		if len(m.Floats) != 3 {
			c.Send(r.coord, failed{Replica: r.id, Round: r.round, Err: fmt.Errorf("%d floats back, want 3", len(m.Floats))})
			return
		}
		c.Send(r.coord, measured{Round: r.round, Obs: obs{Replica: r.id, Temp: r.temp, E: m.Floats[0], M: m.Floats[1], Flips: m.Floats[2], Received: true}})
	case *ra.RequestError:
		c.Send(r.coord, failed{Replica: r.id, Round: r.round, Err: m})
	}
}

// coordinator runs the rounds: sweeps out, energies in (the barrier),
// swaps decided, exchanges out.
type coordinator struct {
	o        options
	replicas []*actor.PID
	lad      *ladder
	caller   *actor.PID
	round    int
	in       int // replicas reported this round
	rec      record
	done     bool
}

func (k *coordinator) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case begin:
		k.caller = c.Sender()
		k.rec.Obs = make([][]obs, k.o.rounds)
		k.sweeps(c)
	case measured:
		if k.done {
			return
		}
		row := k.rec.Obs[k.round]
		if m.Round != k.round || row[m.Obs.Replica].Received {
			k.finish(c, fmt.Errorf("replica %d reported round %d during round %d", m.Obs.Replica, m.Round, k.round))
			return
		}
		row[m.Obs.Replica] = m.Obs
		if k.in++; k.in < len(k.replicas) {
			return
		}
		// Every replica is in: each must run at the temperature the
		// ladder gave it (the exchanges reached it), then the swaps.
		for t, rep := range k.lad.who {
			if row[rep].Temp != t {
				k.finish(c, fmt.Errorf("round %d: replica %d ran at temperature %d, the ladder has it at %d", k.round, rep, row[rep].Temp, t))
				return
			}
		}
		ds := k.lad.exchange(k.round, func(r int) float32 { return row[r].E })
		k.rec.Decisions = append(k.rec.Decisions, ds...)
		for _, d := range ds {
			if d.Accepted {
				c.Send(k.replicas[d.A], exchange{Round: k.round, Temp: d.T + 1})
				c.Send(k.replicas[d.B], exchange{Round: k.round, Temp: d.T})
			}
		}
		if k.round++; k.round == k.o.rounds {
			k.finish(c, nil)
			return
		}
		k.sweeps(c)
	case failed:
		k.finish(c, fmt.Errorf("replica %d, round %d: %w", m.Replica, m.Round, m.Err))
	}
}

func (k *coordinator) sweeps(c actor.Context) {
	k.in = 0
	k.rec.Obs[k.round] = make([]obs, len(k.replicas))
	for _, pid := range k.replicas {
		c.Request(pid, sweep{Round: k.round})
	}
}

func (k *coordinator) finish(c actor.Context, err error) {
	if k.done {
		return
	}
	k.done = true
	if err != nil {
		c.Send(k.caller, err)
		return
	}
	c.Send(k.caller, k.rec)
}

// exchangeRun spawns the replica actors and the coordinator, runs the
// rounds and stops the actors.
func exchangeRun(ctx context.Context, rt *ra.Runtime, o options, bs []float64, stages []*actor.PID) (record, error) {
	root := rt.System().Root
	var pids []*actor.PID
	defer func() {
		for _, pid := range pids {
			root.StopFuture(pid).Wait()
		}
	}()
	reps := make([]*actor.PID, len(stages))
	for k, st := range stages {
		r := &replicaActor{id: k, o: o, betas: bs, stage: st, temp: k}
		reps[k] = root.Spawn(actor.PropsFromProducer(func() actor.Actor { return r }))
		pids = append(pids, reps[k])
	}
	coord := root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &coordinator{o: o, replicas: reps, lad: newLadder(bs, o.seed)}
	}))
	pids = append(pids, coord)
	// No future timeout: ctx bounds the run, by stopping the future.
	f := root.RequestFuture(coord, begin{}, -1)
	stop := context.AfterFunc(ctx, func() { root.Stop(f.PID()) })
	res, err := f.Result()
	stop()
	if err != nil {
		return record{}, err
	}
	switch r := res.(type) {
	case record:
		return r, nil
	case error:
		return record{}, r
	case nil:
		return record{}, fmt.Errorf("the run did not end: %w", ctx.Err())
	}
	return record{}, fmt.Errorf("the coordinator answered %T", res)
}

// reference runs the same algorithm in one goroutine: the op's Go
// function on lattices of its own, the same seeds, the same ladder.
func reference(o options, bs []float64) (record, error) {
	states := make([][]float32, o.replicas)
	for k := range states {
		states[k] = make([]float32, stateFloats)
	}
	temp := make([]int, o.replicas)
	for k := range temp {
		temp[k] = k
	}
	lad := newLadder(bs, o.seed)
	params := []float32{float32(o.size)}
	out := make([]float32, 3)
	rec := record{Obs: make([][]obs, o.rounds)}
	for r := range o.rounds {
		row := make([]obs, o.replicas)
		for k := range states {
			if _, err := metropolis(params, states[k], message(o, bs[temp[k]], r, k), out); err != nil {
				return rec, err
			}
			row[k] = obs{Replica: k, Temp: temp[k], E: out[0], M: out[1], Flips: out[2], Received: true}
		}
		rec.Obs[r] = row
		ds := lad.exchange(r, func(k int) float32 { return row[k].E })
		for t, k := range lad.who {
			temp[k] = t
		}
		rec.Decisions = append(rec.Decisions, ds...)
	}
	return rec, nil
}

// compare counts the differences between the run and the reference:
// every replica's observation in every round, every decision.
func compare(got, want record, w io.Writer) int {
	bad := 0
	note := func(format string, a ...any) {
		if bad++; bad <= 5 {
			fmt.Fprintf(w, "mismatch: "+format+"\n", a...)
		}
	}
	if len(got.Obs) != len(want.Obs) {
		note("%d rounds, the reference %d", len(got.Obs), len(want.Obs))
	}
	for r := range min(len(got.Obs), len(want.Obs)) {
		for k := range want.Obs[r] {
			if k >= len(got.Obs[r]) || got.Obs[r][k] != want.Obs[r][k] {
				var g obs
				if k < len(got.Obs[r]) {
					g = got.Obs[r][k]
				}
				note("round %d replica %d: %+v, the reference %+v", r, k, g, want.Obs[r][k])
			}
		}
	}
	if len(got.Decisions) != len(want.Decisions) {
		note("%d swap decisions, the reference %d", len(got.Decisions), len(want.Decisions))
	}
	for i := range min(len(got.Decisions), len(want.Decisions)) {
		if got.Decisions[i] != want.Decisions[i] {
			note("decision %d: %+v, the reference %+v", i, got.Decisions[i], want.Decisions[i])
		}
	}
	return bad
}

// digest is an FNV-1a hash of the trajectory: every observation and
// every decision.
func digest(rec record) uint64 {
	h := fnv.New64a()
	for _, row := range rec.Obs {
		for _, x := range row {
			fmt.Fprintf(h, "%d %d %g %g %g;", x.Replica, x.Temp, x.E, x.M, x.Flips)
		}
	}
	for _, d := range rec.Decisions {
		fmt.Fprintf(h, "%d %d %d %d %t;", d.Round, d.T, d.A, d.B, d.Accepted)
	}
	return h.Sum64()
}

// pairs is each pair of neighbouring temperatures' attempts and swaps.
func pairs(k int, rec record) []pairStat {
	ps := make([]pairStat, k-1)
	for t := range ps {
		ps[t].T = t
	}
	for _, d := range rec.Decisions {
		ps[d.T].Attempts++
		if d.Accepted {
			ps[d.T].Accepted++
		}
	}
	return ps
}

func report(w io.Writer, o options, s summary, elapsed time.Duration) {
	n := o.size * o.size
	fmt.Fprintf(w, "tempering on %s: %d replicas of a %dx%d Ising model on devices %v, %d rounds of %d sweeps, seed %d\n",
		s.Backend, o.replicas, o.size, o.size, s.Devices, o.rounds, o.sweeps, o.seed)
	updates := float64(o.replicas) * float64(o.rounds) * float64(o.sweeps) * float64(n)
	fmt.Fprintf(w, "%v, %.0f rounds/s, %.2fM spin updates/s\n", elapsed.Round(time.Millisecond),
		float64(o.rounds)/elapsed.Seconds(), updates/elapsed.Seconds()/1e6)
	fmt.Fprintln(w)
	// Per temperature: the mean energy and |magnetisation| per site.
	var sumE, sumM []float64 = make([]float64, o.replicas), make([]float64, o.replicas)
	for _, row := range s.Record.Obs {
		for _, x := range row {
			sumE[x.Temp] += float64(x.E)
			sumM[x.Temp] += math.Abs(float64(x.M))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pair\tbeta\tbeta\tattempts\taccepted\trate\t")
	for _, p := range s.Pairs {
		rate := 0.0
		if p.Attempts > 0 {
			rate = float64(p.Accepted) / float64(p.Attempts)
		}
		fmt.Fprintf(tw, "%d-%d\t%.4f\t%.4f\t%d\t%d\t%.2f\t\n", p.T, p.T+1, s.Betas[p.T], s.Betas[p.T+1], p.Attempts, p.Accepted, rate)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "temperature\tbeta\t<E>/site\t<|M|>/site\t")
	rounds := float64(len(s.Record.Obs))
	for t, b := range s.Betas {
		fmt.Fprintf(tw, "%d\t%.4f\t%.4f\t%.4f\t\n", t, b, sumE[t]/rounds/float64(n), sumM[t]/rounds/float64(n))
	}
	tw.Flush()
	fmt.Fprintln(w)
	// Per replica: its device and how many temperatures it visited.
	visited := make([]map[int]bool, o.replicas)
	for k := range visited {
		visited[k] = map[int]bool{}
	}
	for _, row := range s.Record.Obs {
		for _, x := range row {
			visited[x.Replica][x.Temp] = true
		}
	}
	fmt.Fprint(w, "temperatures each replica visited:")
	for k := range visited {
		fmt.Fprintf(w, " r%d@%d:%d", k, s.Devices[k%len(s.Devices)], len(visited[k]))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "trajectory digest %016x\n", s.Digest)
	fmt.Fprintf(w, "checked %d energies and %d swap decisions against the single-goroutine reference: %d mismatches\n",
		len(s.Record.Obs)*o.replicas, len(s.Record.Decisions), s.Mismatches)
}
