package security

import (
	"github.com/samsa-io/samsa/internal/metadata"
)

// ACLPublisher keeps an Authorizer's ACLs those of the metadata image the
// node has applied (Kafka's AclPublisher); register it with the node's
// metadata.Loader. A full image (a restored snapshot, or the first image
// after registering) rebuilds the ACL set; a delta removes the ACLs its
// batch removed and adds those it added, as one snapshot swapped
// atomically, so no request ever sees half a batch — a DENY created
// before an ALLOW is never seen after it. The first image marks the
// authorizer loaded.
type ACLPublisher struct {
	A *Authorizer
}

// Publish implements metadata.Publisher.
func (p ACLPublisher) Publish(d *metadata.Delta, img *metadata.Image) {
	a := p.A
	switch {
	case d.Full || !a.Loaded():
		a.SetACLs(NewACLSet(ImageACLs(img.ACLs())))
	case len(d.ChangedACLs) > 0:
		var add, remove []ACL
		for _, id := range d.ChangedACLs {
			if m, ok := d.Prev.ACLs()[id]; ok {
				remove = append(remove, ACLFromMetadata(m))
			}
			if m, ok := img.ACLs()[id]; ok {
				add = append(add, ACLFromMetadata(m))
			}
		}
		a.SetACLs(a.ACLs().Update(add, remove))
	}
	a.loaded.Store(true)
}
