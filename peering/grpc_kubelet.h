#pragma once
// Private to peering/ (grpc_*.cpp only): the RemoteKubelet gRPC service and client stub,
// built by grpc_server.cpp / grpc_client.cpp around their channel and server.
#include <grpcpp/grpcpp.h>

#include <memory>

#include "peering/kubelet_transport.h"

namespace strait::peering {

// The RemoteKubelet service delegating to `handler` (borrowed; must outlive the service).
std::unique_ptr<grpc::Service> newRemoteKubeletService(KubeletHandler& handler);

// A KubeletClient on an existing channel.
std::unique_ptr<KubeletClient> newKubeletClient(std::shared_ptr<grpc::Channel> channel);

}  // namespace strait::peering
