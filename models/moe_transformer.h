#pragma once
// The GShard MoE Transformer, forward pass, as an IR module with global shapes (paper section 2
// and Algorithm 2), for GShard Figure 8: "one MoE layer plus its adjacent Transformer layer".
//
//   MoeLayerConfig c = PaperMoeConfig(/*num_devices=*/128);   // 128 experts on 128 cores
//   std::unique_ptr<ir::Module> m = BuildMoeLayerPair(c);      // annotated, ready to partition
//
// Layer pair (entry parameters in this order):
//   x [G,S,M]                                                         split on G (data parallel)
//   Transformer layer: y = x + SelfAttention(x);  z = y + Relu(y wi_ffn) wo_ffn
//   MoE layer:         u = z + SelfAttention(z);  out = u + MoeFfn(u)          (out is the root)
// Self-attention: q/k/v = einsum("GSM,MNK->GSNK"), the S tokens of a group cut into S/L
// sequences of L = seq_len tokens, logits = einsum("GBLNK,GBTNK->GBNLT") / sqrt(K), softmax over
// T (exp / reduce / divide), context = einsum("GBNLT,GBTNK->GBNLK"), output projection
// einsum("GBNLK,NKM->GBLM"). No mask (encoder-style). With layer_norm (the config's), each
// sublayer is pre-LayerNorm with residual dropout after attention and the dense FFN, as Lingvo's:
//   y = x + Dropout(SelfAttention(LN(x)));  z = y + Dropout(Ffn(LN(y)));  ...;
//   out = u + Dropout(MoeFfn(LN(u)));  Ffn(h) = Dropout(relu(h wi)) wo
// MoeFfn is Algorithm 2 (BuildMoeLayer builds it alone, with inputs / wg / wi / wo parameters):
//   gates            = softmax(einsum("GSM,ME->GSE", inputs, wg))
//   combine, dispatch = Top2Gating(gates)                        (models/top2_gating.h, Alg. 1)
//   dispatched       = transpose(einsum("GSEC,GSM->GECM", dispatch, inputs)) -> [E,G,C,M]
//   h                = relu(einsum("EGCM,EMH->EGCH", dispatched, wi))
//   expert_outputs   = transpose(einsum("EGCH,EHM->EGCM", h, wo))         -> [G,E,C,M]
//   outputs          = einsum("GSEC,GECM->GSM", combine, expert_outputs)
// The two transposes are the paper's einsum outputs EGCM (dispatch) and GECM (expert outputs);
// they are kept as separate instructions because they are where the layout moves between the
// G split and the E split: the SPMD partitioner's two AllToAlls come from them.
//
// Key tensors are named (models/naming.h; a second instance gets a ".1" suffix): x, inputs,
// attention_wq/wk/wv/wo, attention_probs, attention_residual, ffn_wi/wo, ffn_hidden,
// ffn_residual, wg, wi, wo, gating_logits, gates, top1_mask, top2_mask, top1_weight,
// top2_weight, second_expert_uniform, top1_position, top2_position, combine_weights,
// dispatch_mask, dispatched_expert_inputs, expert_hidden, expert_outputs, moe_outputs,
// moe_layer_out.
//
// Annotations (GShard API, partitioner/annotations.h), when `annotate`:
//   x, MoE inputs          Split(dim 0 = G, D)      paper: inputs = split(inputs, 0, D)
//   wg                     Replicate                paper: wg = replicate(wg)
//   dispatched [E,G,C,M]   Split(dim 0 = E, D)      paper: split(dispatched_expert_inputs, 0, D)
//   attention, FFN params  Replicate                (data parallel over G)
// and when also `annotate_experts`:
//   wi [E,M,H], wo [E,H,M] Split(dim 0 = E, D)      the paper's underlined E
//   expert_outputs [G,E,C,M] Split(dim 0 = G, D)    pins the combine AllToAll to its transpose
// Propagation infers the rest. The paper's three annotations alone are enough for a correct
// two-AllToAll program, but then the combine AllToAll is emitted for the combine einsum
// (gate_einsums) instead of the expert-outputs transpose (dispatch_combine); the partitioner's
// provenance names the instruction each collective was emitted for.
//
// Name scopes = Figure 8 categories (models/scopes.h); every instruction gets one:
//   projections       q/k/v/output projection einsums (dot), the attention residual add, and
//                     the x / attention weight parameters
//   attention         reshapes to sequences, 1/sqrt(K) scaling, the QK^T and AV einsums (dots),
//                     softmax (reduce max, subtract, exp, reduce add, divide)
//   transformer_ffn   the dense FFN: two einsums, relu (maximum with 0), residual add, params
//   gate_einsums      the paper's "three einsums" of the gating: GSM,ME->GSE with its softmax,
//                     the dispatch (GSEC,GSM->GECM) and combine (GSEC,GECM->GSM) dots, the
//                     MoE residual add, and the wg parameter
//   gate_cumsum       the rest of the gating (AddTop2Gating, Algorithm 1 after the softmax):
//                     the top-2 selection (argmax, iota/compare one-hots), g1/(g1+g2), the
//                     random policy (random-uniform, compare), the exclusive cumsums over S,
//                     positions, capacity compares, expert counts, and the GSE,GSC->GSEC
//                     combine/dispatch construction (masks and one-hots)
//   dispatch_combine  the two G<->E transposes (dispatched inputs, expert outputs); the
//                     AllToAlls the partitioner emits for them carry this category's time
//   moe_ffn           the expert einsums EGCM,EMH->EGCH and EGCH,EHM->EGCM, relu, wi / wo
// Figure 8's "Gate Einsums" counts the dispatch and combine einsums' FLOPs (at 128E their
// 2 x 2SECM = 34 GFLOP per core are ~560 of its 597 us roofline), and its "Dispatch and combine"
// bar is the AllToAll communication only; hence the dots in gate_einsums and only the layout
// moves in dispatch_combine.
//
// Paper size (PaperMoeConfig): M = 1024, H = 8192, 16 heads of 128, S = 2048 tokens per core,
// G = E = D (one group per core, one expert per core), C = 2S/E. Assumptions, not stated in the
// paper, chosen because they reproduce Figure 8's 128E rooflines at 61.5 TFLOP/s per v3 core:
//   - Each of the two layers has its own self-attention (an MoE layer is a Transformer layer
//     whose FFN is MoE): 8 projection einsums of 2*S*M*N*K = 8.6 GFLOP = 69 GFLOP -> 1117 us
//     (paper 1149). One attention block would give half.
//   - seq_len L = 512: 2 blocks x 2 einsums x 2*S*L*N*K = 17.2 GFLOP -> 279 us (paper 269).
//   Transformer FFN 2 x 2*S*M*H = 69 GFLOP -> 1117 us (paper 1105) and MoE FFN
//   2 x 2*(G*C)*M*H per core (one expert, G*C = 4096 slots) = 137 GFLOP -> 2235 us (paper 2269)
//   need no assumption.

#include <cstdint>
#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "ir/builder.h"
#include "ir/dtype.h"
#include "ir/module.h"

namespace podsim::models {

struct MoeLayerConfig {
  int64_t num_groups = 128;         // G, groups of tokens; the paper has one per core (G = D)
  int64_t tokens_per_group = 2048;  // S, tokens per group (the paper's 2048 tokens per core)
  int64_t d_model = 1024;           // M
  int64_t d_ff = 8192;              // H, hidden width of the dense FFN and of every expert
  int64_t num_experts = 128;        // E, >= 2; the paper has one per core (E = D)
  // C, slots per expert per group; 0 = DefaultCapacity (2S/E rounded up, at least 1).
  int64_t capacity = 0;
  int64_t num_heads = 16;  // N
  int64_t head_dim = 128;  // K (N*K need not equal M; in the paper it is 2M)
  // L, tokens per attention sequence; must divide S (S/L sequences per group). Not in the paper;
  // 512 matches Figure 8's attention roofline (see above).
  int64_t seq_len = 512;
  // Self-attention inside the MoE layer too (a Transformer layer with an MoE FFN, as in GShard
  // and Lingvo). false: the pair is attention + FFN + the MoE FFN alone.
  bool moe_layer_attention = true;
  ir::DType dtype = ir::DType::kF32;  // activations and dispatch/combine payloads
  // Parameters, stored in this type and converted to `dtype` where a layer uses them (the
  // convert fuses into the consuming dot's operand: the dot reads the stored weight). The
  // gating softmax runs in f32 whatever the two types.
  ir::DType weight_dtype = ir::DType::kF32;
  // The paper's annotations (inputs split on G, wg replicated, dispatched inputs split on E) and
  // replicated attention / FFN parameters. false: no shardings at all.
  bool annotate = true;
  // With `annotate`: also wi / wo split on E and expert outputs split on G.
  bool annotate_experts = true;
  int64_t num_devices = 128;  // D, the partition count the annotations split over
  // The logical mesh of the annotations (models/layer_mesh.h): D = data x expert x model.
  // model_parallel splits the attention heads, the FFN hidden dim and every expert's hidden dim;
  // expert_parallel splits the experts (0: D / model_parallel, the paper's layout with
  // model_parallel = 1); the data axis is what is left.
  int64_t model_parallel = 1;
  int64_t expert_parallel = 0;
  uint64_t seed = 0;          // seed of the gating's random-uniform op (dropout: seed + 1 + n)
  // Pre-LayerNorm sublayers, as Lingvo's Transformer layers: x + Sublayer(LN(x)), each
  // LayerNorm with its own [M] scale and bias parameters, added before the sublayer's weights;
  // and dropout as Lingvo's GShard builder places it: on every sublayer's output before its
  // residual add, x + Dropout(Sublayer(...)), and on the dense FFN's hidden activations (not
  // inside the MoE experts). Both off by default (the pair as the paper's Algorithm 2 writes
  // it). The whole model (models/gshard_model.h) always has LayerNorm and its own dropout rate.
  bool layer_norm = false;
  double dropout = 0;  // dropout rate, in [0, 1)

  // `base` with the sizes an object gives: tokens_per_group, d_model, d_ff, num_heads,
  // head_dim, seq_len, capacity (0: DefaultCapacity), moe_layer_attention, layer_norm, dropout,
  // dtype and weight_dtype ("f32", "bf16"), model_parallel and expert_parallel. G, E and D come
  // from where the model runs. Unknown keys and bad values are ConfigErrors naming `path`.key.
  static MoeLayerConfig FromJson(const nlohmann::json& json, const std::string& path,
                                 MoeLayerConfig base);
  // The resolved sizes (capacity as ExpertCapacity), for results files.
  nlohmann::json ToJson() const;
};

// The Figure 8 configuration on `num_devices` cores: G = E = D, everything else the defaults
// above (which are the paper's sizes).
MoeLayerConfig PaperMoeConfig(int64_t num_devices);

// A toy size for tests and demos: G = 4, S = 8, M = 16, H = 32, E = 4 (C = 4), 2 heads of 8,
// L = 4, D = 4.
MoeLayerConfig ToyMoeConfig();

// 2S/E rounded up, at least 1: the paper's C = 2N/(G*E) per group and expert.
int64_t DefaultCapacity(int64_t tokens_per_group, int64_t num_experts);
// config.capacity, or DefaultCapacity when it is 0.
int64_t ExpertCapacity(const MoeLayerConfig& config);

// Throws podsim::Error naming the field ("moe.num_experts: must be >= 2, got 1") when a size is
// out of range, seq_len does not divide tokens_per_group, or an annotation would split a dim
// into more parts than it has (num_devices > G or > E).
void ValidateMoeConfig(const MoeLayerConfig& config);

// The forward pass of the layer pair (see above), verified. Root: out [G,S,M].
std::unique_ptr<ir::Module> BuildMoeLayerPair(const MoeLayerConfig& config);

// Algorithm 2 alone (gating, dispatch, experts, combine), verified. Parameters: inputs [G,S,M],
// wg [M,E], wi [E,M,H], wo [E,H,M]. Root: outputs [G,S,M] (no residual). The transformer fields
// of the config are not used.
std::unique_ptr<ir::Module> BuildMoeLayer(const MoeLayerConfig& config);

// LayerNorm over the last dim in f32: (x - mean) * rsqrt(var + 1e-6) * scale + bias, back in x's
// element type. scale and bias are [M].
ir::Instruction* LayerNorm(ir::Builder& b, ir::Instruction* x, ir::Instruction* scale,
                           ir::Instruction* bias);
// Inverted dropout at `rate`: x * (u >= rate) / (1 - rate), u uniform in [0,1); x itself at rate
// 0. `site` picks the random stream (seed); `index` (s32 scalar or null) and `count` place this
// draw in a [count, ...] global tensor, so every layer iteration of a loop draws its own mask.
ir::Instruction* Dropout(ir::Builder& b, ir::Instruction* x, double rate, uint64_t site,
                         ir::Instruction* index, int64_t count);

// Cores of the blocks, on weights the caller provides (parameters, or slices of stacked weights
// in a layer loop), all in `queries`' / `x`'s / `inputs`' element type. Scopes as above.
struct AttentionWeights {
  ir::Instruction* wq = nullptr;  // [M,N,K]
  ir::Instruction* wk = nullptr;  // [M,N,K]
  ir::Instruction* wv = nullptr;  // [M,N,K]
  ir::Instruction* wo = nullptr;  // [N,K,M]
};
// Multi-head attention of `queries` [G,S,M] over `memory` [G,S,M] (the same instruction for
// self-attention), per sequence of seq_len tokens; `causal` hides later positions (decoder
// self-attention). Returns the output projection [G,S,M], without residual.
ir::Instruction* AddAttentionCore(ir::Builder& b, ir::Instruction* queries,
                                  ir::Instruction* memory, const AttentionWeights& w,
                                  const MoeLayerConfig& config, bool causal);
// relu(x wi) wo, without residual; with dropout > 0, Dropout(relu(x wi), dropout, site, index,
// count) wo (Lingvo's DenseReluDense drops out the hidden activations; the MoE experts do not).
ir::Instruction* AddFfnCore(ir::Builder& b, ir::Instruction* x, ir::Instruction* wi,
                            ir::Instruction* wo, double dropout = 0, uint64_t site = 0,
                            ir::Instruction* index = nullptr, int64_t count = 1);
struct MoeWeights {
  ir::Instruction* wg = nullptr;  // [M,E]
  ir::Instruction* wi = nullptr;  // [E,M,H]
  ir::Instruction* wo = nullptr;  // [E,H,M]
};
// Algorithm 2 on `inputs` [G,S,M] with the annotations above (wi / wo split on E when
// annotate_experts); returns outputs [G,S,M] without residual. With `aux_loss`, also the
// gating's auxiliary loss.
ir::Instruction* AddMoeCore(ir::Builder& b, ir::Instruction* inputs, const MoeWeights& w,
                            const MoeLayerConfig& config, ir::Instruction** aux_loss = nullptr);

// Building blocks, for other model builders. Each adds its parameters, numbered from
// *next_parameter (advanced past them), to the builder's computation and sets the scopes above.
// Self-attention with q/k/v/output projections; returns x + attention(x), with LN(x) in place of
// x inside the sublayer when layer_norm and Dropout(attention(...)) when dropout > 0.
ir::Instruction* AddSelfAttention(ir::Builder& b, ir::Instruction* x, int64_t* next_parameter,
                                  const MoeLayerConfig& config);
// Dense FFN; returns x + relu(x wi) wo, with LN and dropout as AddSelfAttention's (and the
// hidden activations' dropout).
ir::Instruction* AddDenseFfn(ir::Builder& b, ir::Instruction* x, int64_t* next_parameter,
                             const MoeLayerConfig& config);
// The MoE sublayer: returns u + MoeFfn(u), named moe_layer_out, with LN and dropout as
// AddSelfAttention's. `aux_loss` as AddMoeFfn's.
ir::Instruction* AddMoeSublayer(ir::Builder& b, ir::Instruction* u, int64_t* next_parameter,
                                const MoeLayerConfig& config, ir::Instruction** aux_loss = nullptr);
// Algorithm 2 on `inputs` [G,S,M]; returns outputs [G,S,M] (without residual). With `aux_loss`,
// also builds the gating's auxiliary load-balancing loss (models/top2_gating.h) into it.
ir::Instruction* AddMoeFfn(ir::Builder& b, ir::Instruction* inputs, int64_t* next_parameter,
                           const MoeLayerConfig& config, ir::Instruction** aux_loss = nullptr);

}  // namespace podsim::models
