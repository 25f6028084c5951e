package cuda

import (
	"encoding/binary"
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
	rk "github.com/ringactor/ringactor/ringkernel"
)

// bindings checks the buffers job's stage binds before its kernel starts:
// each a live buffer of this backend on the kernel's device or on a peer
// of it (the backend enabled peer access between every pair of open
// devices that have it), so that the kernel can address it; and it puts
// their addresses and sizes into the argument block a (unless nil).
func (b *Backend) bindings(job *rk.Job, a []byte) error {
	binds, name, dev := job.Spec.Stage.Buffers, job.Spec.Stage.Name, job.Spec.Device
	if len(binds) > rk.MaxStageBuffers {
		return fmt.Errorf("%w %q: %d bound buffers; a stage binds at most %d", rk.ErrBadStage, name, len(binds), rk.MaxStageBuffers)
	}
	if len(binds) == 0 {
		return nil
	}
	gpus, err := b.listed()
	if err != nil {
		return err
	}
	peer := p2pqueue.PeerFunc(func(a, c int) bool { return a < len(gpus) && c < len(gpus[a].P2P) && gpus[a].P2P[c] })
	for i, bd := range binds {
		if _, _, err := b.buffer(bd.Buf); err != nil {
			return fmt.Errorf("%w %q: bound buffer %d: %w; bind buffers allocated by this backend (AllocBuffer)", rk.ErrBadStage, name, i, err)
		}
		if p := p2pqueue.PathOf(dev, bd.Buf.Device, peer); p != p2pqueue.PathLocal && p != p2pqueue.PathPeer {
			return fmt.Errorf("%w %q: bound buffer %d is on device %d, which device %d reaches only by a %v copy, not by peer access; allocate it on device %[5]d or on a peer of it, or copy it there",
				rk.ErrBadStage, name, i, bd.Buf.Device, dev, p)
		}
		if a != nil {
			binary.LittleEndian.PutUint64(a[rk.ArgOffBuf+8*i:], bd.Buf.Addr)
			binary.LittleEndian.PutUint64(a[rk.ArgOffBufSize+8*i:], uint64(bd.Buf.Size))
		}
	}
	if a != nil {
		binary.LittleEndian.PutUint32(a[rk.ArgOffNumBuf:], uint32(len(binds)))
	}
	return nil
}
