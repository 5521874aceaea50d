package dockertest

// This file joins network namespaces for StartSwarm: a bridge, veth pairs
// and IPv4 addresses, made by rtnetlink from a thread inside the
// namespace they are for (inNS), never in the machine's (enter refuses
// it), and with no ip command.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// vethInfoPeer is VETH_INFO_PEER (linux/veth.h): the attribute of a new
// veth that holds its peer.
const vethInfoPeer = 1

// inNS runs fn on a thread inside ns (see enter), and returns its error.
// fn must do its work on the calling goroutine (a socket it opens belongs
// to ns for its life).
func inNS(ns *os.File, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := enter(ns); err != nil {
			ch <- err
			return // locked: the thread ends, wherever it is
		}
		err := fn()
		leave()
		ch <- err
	}()
	return <-ch
}

// rtnl is a route netlink socket, of the namespace of the thread that
// opened it.
type rtnl struct {
	fd  int
	seq uint32
}

func openRtnl() (*rtnl, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink: %w", err)
	}
	return &rtnl{fd: fd}, nil
}

func (r *rtnl) close() { unix.Close(r.fd) }

// do sends one request and waits for its acknowledgement.
func (r *rtnl) do(typ, flags uint16, body []byte) error {
	r.seq++
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	msg = append(msg, body...)
	ne := binary.NativeEndian
	ne.PutUint32(msg[0:], uint32(len(msg)))
	ne.PutUint16(msg[4:], typ)
	ne.PutUint16(msg[6:], flags|unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	ne.PutUint32(msg[8:], r.seq)
	if err := unix.Sendto(r.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(r.fd, buf, 0)
		if err != nil {
			return fmt.Errorf("netlink: %w", err)
		}
		for b := buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
			l := int(ne.Uint32(b[0:]))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return errors.New("netlink: a malformed answer")
			}
			if ne.Uint16(b[4:]) == unix.NLMSG_ERROR && ne.Uint32(b[8:]) == r.seq {
				if l < unix.SizeofNlMsghdr+4 {
					return errors.New("netlink: a malformed answer")
				}
				if errno := int32(ne.Uint32(b[unix.SizeofNlMsghdr:])); errno != 0 {
					return unix.Errno(-errno)
				}
				return nil
			}
			b = b[min(len(b), (l+3)&^3):]
		}
	}
}

// attr is one netlink attribute holding the concatenation of data.
func attr(typ uint16, data ...[]byte) []byte {
	l := unix.SizeofRtAttr
	for _, d := range data {
		l += len(d)
	}
	b := make([]byte, unix.SizeofRtAttr, (l+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(l))
	binary.NativeEndian.PutUint16(b[2:], typ)
	for _, d := range data {
		b = append(b, d...)
	}
	return append(b, make([]byte, cap(b)-len(b))...)
}

func cstr(s string) []byte { return append([]byte(s), 0) }

func u32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }

// ifinfomsg is a struct ifinfomsg for the link of index, its flags set
// to flags within change.
func ifinfomsg(index int32, flags, change uint32) []byte {
	b := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	binary.NativeEndian.PutUint32(b[12:], change)
	return b
}

// newBridge makes the bridge name.
func (r *rtnl) newBridge(name string) error {
	err := r.do(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL, slices.Concat(ifinfomsg(0, 0, 0),
		attr(unix.IFLA_IFNAME, cstr(name)),
		attr(unix.IFLA_LINKINFO, attr(unix.IFLA_INFO_KIND, []byte("bridge")))))
	if err != nil {
		return fmt.Errorf("bridge %s: %w", name, err)
	}
	return nil
}

// newVeth makes the veth pair name, here, and peer, in the namespace ns.
func (r *rtnl) newVeth(name, peer string, ns *os.File) error {
	err := r.do(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL, slices.Concat(ifinfomsg(0, 0, 0),
		attr(unix.IFLA_IFNAME, cstr(name)),
		attr(unix.IFLA_LINKINFO,
			attr(unix.IFLA_INFO_KIND, []byte("veth")),
			attr(unix.IFLA_INFO_DATA, attr(vethInfoPeer, ifinfomsg(0, 0, 0),
				attr(unix.IFLA_IFNAME, cstr(peer)),
				attr(unix.IFLA_NET_NS_FD, u32(uint32(ns.Fd()))))))))
	if err != nil {
		return fmt.Errorf("veth %s-%s: %w", name, peer, err)
	}
	return nil
}

// linkIndex is the index of the link name in the calling thread's
// namespace.
func linkIndex(name string) (int32, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return 0, err
	}
	return int32(ifc.Index), nil
}

// up sets the link name up, a port of the bridge master unless master is
// "".
func (r *rtnl) up(name, master string) error {
	i, err := linkIndex(name)
	if err != nil {
		return fmt.Errorf("%s up: %w", name, err)
	}
	body := ifinfomsg(i, unix.IFF_UP, unix.IFF_UP)
	if master != "" {
		m, err := linkIndex(master)
		if err != nil {
			return fmt.Errorf("%s up: %w", name, err)
		}
		body = slices.Concat(body, attr(unix.IFLA_MASTER, u32(uint32(m))))
	}
	if err := r.do(unix.RTM_NEWLINK, 0, body); err != nil {
		return fmt.Errorf("%s up: %w", name, err)
	}
	return nil
}

// addAddr gives the link name the IPv4 address and prefix of cidr.
func (r *rtnl) addAddr(name, cidr string) error {
	ip, ipnet, err := net.ParseCIDR(cidr)
	if err != nil || ip.To4() == nil {
		return fmt.Errorf("address %s: want IPv4 and its prefix (%v)", cidr, err)
	}
	i, err := linkIndex(name)
	if err != nil {
		return fmt.Errorf("address %s on %s: %w", cidr, name, err)
	}
	ones, _ := ipnet.Mask.Size()
	msg := make([]byte, unix.SizeofIfAddrmsg)
	msg[0], msg[1] = unix.AF_INET, byte(ones)
	binary.NativeEndian.PutUint32(msg[4:], uint32(i))
	err = r.do(unix.RTM_NEWADDR, unix.NLM_F_CREATE|unix.NLM_F_EXCL, slices.Concat(msg,
		attr(unix.IFA_LOCAL, ip.To4()), attr(unix.IFA_ADDRESS, ip.To4())))
	if err != nil {
		return fmt.Errorf("address %s on %s: %w", cidr, name, err)
	}
	return nil
}

// del removes the link name (a veth takes its peer along); one that is
// gone already is no error.
func (r *rtnl) del(name string) error {
	i, err := linkIndex(name)
	if err != nil {
		return nil
	}
	if err := r.do(unix.RTM_DELLINK, 0, ifinfomsg(i, 0, 0)); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// wire makes the bridge in the hub, a veth from it to each engine, and
// their addresses, and sets them up.
func (s *Swarm) wire() error {
	err := inNS(s.hub, func() error {
		nl, err := openRtnl()
		if err != nil {
			return err
		}
		defer nl.close()
		if err := nl.newBridge(swarmBridge); err != nil {
			return err
		}
		if err := nl.addAddr(swarmBridge, swarmHubAddr+swarmPrefix); err != nil {
			return err
		}
		if err := nl.up(swarmBridge, ""); err != nil {
			return err
		}
		for _, n := range s.Nodes {
			if err := nl.newVeth(n.Name, swarmLink, n.netns); err != nil {
				return err
			}
			if err := nl.up(n.Name, swarmBridge); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range s.Nodes {
		err := inNS(n.netns, func() error {
			nl, err := openRtnl()
			if err != nil {
				return err
			}
			defer nl.close()
			if err := nl.addAddr(swarmLink, n.Addr+swarmPrefix); err != nil {
				return err
			}
			return nl.up(swarmLink, "")
		})
		if err != nil {
			return fmt.Errorf("engine %s: %w", n.Name, err)
		}
	}
	return nil
}

// unwire removes the engines' veths from the hub; the bridge goes with
// the hub.
func (s *Swarm) unwire() error {
	return inNS(s.hub, func() error {
		nl, err := openRtnl()
		if err != nil {
			return err
		}
		defer nl.close()
		var errs []error
		for _, n := range s.Nodes {
			errs = append(errs, nl.del(n.Name))
		}
		return errors.Join(errs...)
	})
}
