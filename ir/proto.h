#pragma once
// The protobuf form of a module (ir/ir.proto), converted loss-free both ways. Protobuf types
// stay inside proto.cc so that only it pays for the generated headers.

#include <memory>
#include <string>
#include <string_view>

#include "ir/module.h"

namespace podsim::ir {

// Serialized podsim.ir.ModuleProto bytes.
std::string ModuleToProtoBytes(const Module& module);
// Parses bytes from ModuleToProtoBytes; throws podsim::Error on malformed input; verifies.
std::unique_ptr<Module> ModuleFromProtoBytes(std::string_view bytes);

}  // namespace podsim::ir
