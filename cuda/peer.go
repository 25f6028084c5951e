package cuda

import (
	"errors"
	"fmt"
)

// CanAccessPeer reports whether this device can map peer's memory
// (cuDeviceCanAccessPeer). A device is not its own peer.
func (v *Device) CanAccessPeer(peer *Device) (bool, error) {
	if v == nil || peer == nil {
		return false, errNilDevice
	}
	ok, r := v.d.deviceCanAccessPeer(v.handle, peer.handle)
	if err := v.d.err("cuDeviceCanAccessPeer", r); err != nil {
		return false, err
	}
	return ok, nil
}

// P2PAttribute reads an attribute of the link from this device to peer
// (cuDeviceGetP2PAttribute).
func (v *Device) P2PAttribute(a P2PAttribute, peer *Device) (int, error) {
	if v == nil || peer == nil {
		return 0, errNilDevice
	}
	n, r := v.d.deviceP2PAttribute(int(a), v.handle, peer.handle)
	if err := v.d.err(fmt.Sprintf("cuDeviceGetP2PAttribute(%d)", int(a)), r); err != nil {
		return 0, err
	}
	return n, nil
}

// EnablePeerAccess lets kernels of c read and write memory of peer's
// context through the peer mapping (cuCtxEnablePeerAccess). Enabling it
// again is not an error.
func (c *Context) EnablePeerAccess(peer *Context) error {
	if c == nil || peer == nil {
		return errNilContext
	}
	peer.mu.RLock()
	h, gone := peer.handle, peer.released
	peer.mu.RUnlock()
	if gone {
		return fmt.Errorf("cuda: EnablePeerAccess: the peer context (device %d) was released: %w", peer.dev.ordinal, ErrReleased)
	}
	if h == c.handle {
		return fmt.Errorf("cuda: EnablePeerAccess: device %d cannot be its own peer", c.dev.ordinal)
	}
	err := c.do("cuCtxEnablePeerAccess", func() Result { return c.driver().ctxEnablePeerAccess(h) })
	if errors.Is(err, &Error{Result: ErrorPeerAccessAlreadyEnabled}) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cuda: peer access from device %d to device %d: %w", c.dev.ordinal, peer.dev.ordinal, err)
	}
	return nil
}
