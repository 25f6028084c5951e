// Package hosts is ringactor's protoactor cluster provider for a fixed
// host list (cluster.Join uses it when NodeConfig.Peers is set). It speaks
// protoactor's automanaged health-check protocol and differs from it where
// a node that stalls must come back: see Provider, and docs/ARCHITECTURE.md
// §8 "Stalls".
package hosts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
)

// Provider is the provider cluster.Join uses for a fixed host list. It speaks
// protoactor's automanaged protocol (each node answers GET /_health on its
// ManagePort with its member, an automanaged.NodeModel in JSON, and checks
// every peer each RefreshTTL), and differs from automanaged where a node
// that stalls (SIGSTOP, a long pause, a saturated host) must come back:
//
//   - protoactor's member list blocks, for good, every member id that has
//     left the topology, and a member's id is its actor system's id, which
//     a live process keeps. So a peer that left and answers again rejoins
//     under a new member id: its system id with its incarnation, "id+2",
//     "id+3", …; Rejoin sees a new member of the node's name and places
//     its segments again.
//   - A peer leaves the topology once it has failed missLimit checks in a
//     row, not one: a node that was itself stopped finds the checks it had
//     in flight timed out when it resumes, and must not drop (and so block)
//     its peers for them.
//   - A node always lists itself.
type Provider struct {
	ttl     time.Duration
	port    int
	hosts   []string
	timeout time.Duration
	client  *http.Client

	c    *cluster.Cluster
	self *cluster.Member
	node automanaged.NodeModel
	srv  *http.Server

	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	// The monitor's own, between rounds.
	misses map[string]int     // host -> checks failed in a row
	listed map[string]listing // host -> the member listed for it
	born   map[string]int     // system id -> incarnations seen
}

// listing is a peer in the topology: its member, and the actor system id
// it answered with.
type listing struct {
	system string
	m      *cluster.Member
}

// missLimit is how many checks in a row a peer fails before it leaves the
// topology.
const missLimit = 2

// New returns a provider that checks hosts (host:port of their manage
// ports) every ttl, each check bounded by twice ttl (at least 1 s), and
// answers checks on port.
func New(ttl time.Duration, port int, hosts []string) *Provider {
	timeout := max(2*ttl, time.Second)
	return &Provider{ttl: ttl, port: port, hosts: hosts, timeout: timeout,
		client: &http.Client{Timeout: timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}},
		stop:   make(chan struct{}), done: make(chan struct{}),
		misses: map[string]int{}, listed: map[string]listing{}, born: map[string]int{}}
}

// StartMember answers health checks on the manage port and starts
// checking the peers.
func (p *Provider) StartMember(c *cluster.Cluster) error {
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil {
		return err
	}
	p.c = c
	p.self = &cluster.Member{Id: c.ActorSystem.ID, Host: host, Port: int32(port), Kinds: c.GetClusterKinds()}
	p.node = automanaged.NodeModel{ID: p.self.Id, Address: host, Port: port, AutoManagePort: p.port,
		Kinds: p.self.Kinds, ClusterName: c.Config.Name}
	ln, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(p.port)))
	if err != nil {
		return fmt.Errorf("manage port %d: %w", p.port, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p.node)
	})
	// The server's errors go to the actor system's logger (the runtime's
	// Config.Logger), not through package log to stderr.
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(c.ActorSystem.Logger().Handler(), slog.LevelWarn)}
	go p.srv.Serve(ln)
	go p.monitor()
	return nil
}

// StartClient: a client node is not among the hosts; it only checks them.
func (p *Provider) StartClient(c *cluster.Cluster) error {
	return errors.New("ringactor: the fixed-host-list provider runs members only")
}

// Shutdown stops answering and checking, and waits for the monitor.
func (p *Provider) Shutdown(bool) error {
	p.stopOnce.Do(func() {
		close(p.stop)
		if p.srv != nil {
			p.srv.Close()
			<-p.done
		}
		p.client.CloseIdleConnections()
	})
	return nil
}

func (p *Provider) monitor() {
	defer close(p.done)
	for {
		p.round()
		select {
		case <-p.stop:
			return
		case <-time.After(p.ttl):
		}
	}
}

// round checks every host once and hands the topology to protoactor.
func (p *Provider) round() {
	nodes := make([]*automanaged.NodeModel, len(p.hosts))
	var wg sync.WaitGroup
	for i, h := range p.hosts {
		wg.Go(func() { nodes[i] = p.check(h) })
	}
	wg.Wait()
	select {
	case <-p.stop: // shutting down: a failed check says nothing
		return
	default:
	}
	members := []*cluster.Member{p.self}
	for i, h := range p.hosts {
		n := nodes[i]
		if n != nil && n.ID == p.self.Id {
			continue
		}
		if n == nil || n.ClusterName != p.node.ClusterName {
			p.misses[h]++
			if p.misses[h] >= missLimit {
				delete(p.listed, h) // it leaves; protoactor blocks its id
			}
		} else {
			p.misses[h] = 0
			l, ok := p.listed[h]
			if !ok || l.system != n.ID { // a new incarnation (or the first)
				p.born[n.ID]++
				l = listing{system: n.ID}
			}
			l.m = &cluster.Member{Id: p.memberID(n.ID), Host: n.Address, Port: int32(n.Port), Kinds: n.Kinds}
			p.listed[h] = l
		}
		if l, ok := p.listed[h]; ok {
			members = append(members, l.m)
		}
	}
	p.c.MemberList.UpdateClusterTopology(members)
}

// memberID is the member id of system id's current incarnation.
func (p *Provider) memberID(id string) string {
	if k := p.born[id]; k > 1 {
		return fmt.Sprintf("%s+%d", id, k)
	}
	return id
}

// check asks host for its member; nil when it does not answer in time, or
// answers something else.
func (p *Provider) check(host string) *automanaged.NodeModel {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	go func() { // Shutdown cuts a check short
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/_health", nil)
	if err != nil {
		return nil
	}
	res, err := p.client.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	var n automanaged.NodeModel
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&n) != nil || n.ID == "" {
		return nil
	}
	return &n
}
