#pragma once
// The name scopes (ir::Instruction::scope) of the MoE Transformer builders: the seven categories
// of GShard Figure 8, so that a timing run's time per scope is directly that figure's breakdown.
// Which IR ops go where is listed in models/moe_transformer.h.

#include <array>
#include <string_view>

namespace podsim::models {

inline constexpr std::string_view kScopeMoeFfn = "moe_ffn";
inline constexpr std::string_view kScopeDispatchCombine = "dispatch_combine";
inline constexpr std::string_view kScopeGateCumsum = "gate_cumsum";
inline constexpr std::string_view kScopeGateEinsums = "gate_einsums";
inline constexpr std::string_view kScopeTransformerFfn = "transformer_ffn";
inline constexpr std::string_view kScopeAttention = "attention";
inline constexpr std::string_view kScopeProjections = "projections";

// In Figure 8's legend order.
inline constexpr std::array<std::string_view, 7> kFigure8Scopes = {
    kScopeMoeFfn,         kScopeDispatchCombine, kScopeGateCumsum, kScopeGateEinsums,
    kScopeTransformerFfn, kScopeAttention,       kScopeProjections};

}  // namespace podsim::models
