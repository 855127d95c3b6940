#pragma once
// The dense encoder-decoder Transformer of GShard's baseline, T(96L), cut into the pieces a
// GPipe pipeline places on its stages (pipeline/gpipe.h), each piece a one-core IR module for
// one micro-batch.
//
//   DenseTransformerConfig c;                                    // T(96L): 48 + 48 layers
//   std::vector<DensePiece> pieces = DensePieces(c);             // embedding, 48 encoder, ...
//   PieceModules m = BuildDensePiece(c, DensePiece::kDecoderLayer, /*tokens=*/2048, {});
//
// Layers are those of the MoE model (models/gshard_model.h) with a dense FFN in every layer:
// pre-LayerNorm, dropout on every sublayer output and on the FFN's hidden activations,
//   encoder layer  x = x + Dropout(SelfAttention(LN(x)));  x = x + Dropout(Ffn(LN(x)))
//   decoder layer  y = y + Dropout(CausalSelfAttention(LN(y)))
//                  y = y + Dropout(Attention(LN(y), over the encoder output))
//                  y = y + Dropout(Ffn(LN(y)))
// The model in pipeline order is the sequence of pieces
//   source_embedding, encoder_layer x E, encoder_norm, target_embedding, decoder_layer x D,
//   softmax_loss
// where the encoder output travels with the decoder activations from target_embedding on (a
// decoder stage receives and forwards both, as GPipe's Transformer passes them). softmax_loss is
// the decoder's final LayerNorm, the logits through its own [Vt, M] softmax weight and the mean
// cross-entropy (GPipe keeps every weight on one stage, so the target embedding is not shared
// with the softmax as in the one-program model).
//
// Sizes (docs/training.md, "The dense baseline"): the paper gives 96 layers, 2.3B parameters and
// "the same d_model, d_ff and heads" as the MoE models; 16 heads of 64 (attention width 1024 =
// M) is what makes 48 + 48 layers at M = 1024, H = 8192 come to 2.3B. With the MoE models'
// head_dim of 128 they would be 2.9B.
//
// Each piece's modules work on one micro-batch of `tokens` tokens as one group ([1, T, M],
// sequences of seq_len):
//   forward    (activations in..., weights...) -> the piece's output activation
//   backward   (activations in..., weights..., output gradients..., accumulators...)
//              -> tuple(input gradients..., accumulator + weight gradient ...): the forward
//              recomputed from the saved stage input (GPipe's rematerialisation), its
//              vector-Jacobian product (ir::Differentiate) and the gradient accumulation over
//              micro-batches
//   optimizer  (weights..., gradients..., state..., step) -> tuple(updated weights...,
//              updated state...)  (models/optimizer.h)
// No annotations: a piece runs on one core.

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/module.h"
#include "models/optimizer.h"

namespace podsim::models {

struct DenseTransformerConfig {
  int64_t encoder_layers = 48;
  int64_t decoder_layers = 48;
  int64_t d_model = 1024;  // M
  int64_t d_ff = 8192;     // H
  int64_t num_heads = 16;  // N
  int64_t head_dim = 64;   // K
  // Tokens per attention sequence, as the MoE models' (models/moe_transformer.h).
  int64_t seq_len = 512;
  int64_t source_vocab = 64000;
  int64_t target_vocab = 32000;
  double dropout = 0.1;
  ir::DType dtype = ir::DType::kBF16;        // activations
  ir::DType weight_dtype = ir::DType::kF32;  // weights, LayerNorm and the loss

  // `base` with the keys `json` gives (the fields above by name; dtypes "f32" / "bf16"). Unknown
  // keys and bad values are ConfigErrors naming `path`.key.
  static DenseTransformerConfig FromJson(const nlohmann::json& json, const std::string& path,
                                         DenseTransformerConfig base);
  nlohmann::json ToJson() const;
};

// Throws podsim::Error naming the field ("model.head_dim: must be >= 1, got 0").
void ValidateDenseConfig(const DenseTransformerConfig& config);

enum class DensePiece {
  kSourceEmbedding,
  kEncoderLayer,
  kEncoderNorm,
  kTargetEmbedding,
  kDecoderLayer,
  kSoftmaxLoss
};
const char* DensePieceName(DensePiece piece);  // "encoder_layer", ...

// The model's pieces in pipeline order (2 + E + 1 + D + 1 of them).
std::vector<DensePiece> DensePieces(const DenseTransformerConfig& config);

// Activation tensors of [T, M] a piece receives from the previous one (0 for the source
// embedding, whose input is token ids; 2 from target_embedding's successor on: the decoder
// activations and the encoder output).
int64_t PieceInputTensors(DensePiece piece);
// The same for what it hands to the next piece (0 for softmax_loss).
int64_t PieceOutputTensors(DensePiece piece);

// Weight elements of one piece, and of the whole model (the sum over DensePieces).
int64_t PieceParameters(const DenseTransformerConfig& config, DensePiece piece);
int64_t DenseParameters(const DenseTransformerConfig& config);

struct PieceModules {
  std::unique_ptr<ir::Module> forward;
  std::unique_ptr<ir::Module> backward;
  std::unique_ptr<ir::Module> optimizer;
  int64_t weight_bytes = 0;  // the piece's weights as stored
  int64_t state_bytes = 0;   // their optimizer state
};

// The three modules of `piece` on a micro-batch of `tokens` tokens (a multiple of seq_len),
// verified. Throws podsim::Error for a bad config or token count.
PieceModules BuildDensePiece(const DenseTransformerConfig& config, DensePiece piece, int64_t tokens,
                             const OptimizerConfig& optimizer);

}  // namespace podsim::models
