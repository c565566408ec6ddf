package broker

// DescribeUserScramCredentials, version 0.
//
// Behavior:
//   - Answered from the broker's metadata image, as Kafka's brokers answer
//     it (ScramImage.describe): each user's mechanisms and iteration
//     counts, never salts or keys.
//   - No users (null or empty) describes every user that has a credential.
//   - A user without credentials is RESOURCE_NOT_FOUND, a user named twice
//     DUPLICATE_RESOURCE, each with Kafka's message; one result per user.
//   - Without DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED, for
//     the request and each user named.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-io/samsa/internal/network"
)

func handleDescribeUserSCRAMCredentials(_ context.Context, b *Broker, c *network.Conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.Version = req.Version
	if !b.authz(c).cluster(kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, u := range req.Users {
			r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
			r.User, r.ErrorCode = u.Name, kerr.ClusterAuthorizationFailed.Code
			resp.Results = append(resp.Results, r)
		}
		return resp, nil
	}
	img := b.cfg.Image()
	infos := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var all []string
	for _, k := range img.ScramKeys() {
		c, _ := img.ScramCredential(k.Name, k.Mechanism)
		info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		info.Mechanism, info.Iterations = k.Mechanism, c.Iterations
		if infos[k.Name] == nil {
			all = append(all, k.Name)
		}
		infos[k.Name] = append(infos[k.Name], info)
	}
	users := all
	count := map[string]int{}
	if len(req.Users) > 0 {
		users = nil
		for _, u := range req.Users {
			if count[u.Name]++; count[u.Name] == 1 {
				users = append(users, u.Name)
			}
		}
	}
	for _, u := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u
		switch {
		case count[u] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u)
		case infos[u] == nil:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + u)
		default:
			r.CredentialInfos = infos[u]
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
