# char_gpt_small.mg - examples/char_gpt.mg scaled down for CTest (2 blocks, 2
# heads of 16, width 32, context 16; the same layers, dropout 0.1 on the
# attention weights and both residual branches, adamw with a cosine decay
# after a linear warmup): 2 and 4 devices must train what 1 device trains
# (tests/train.cmake, --synthetic 256: tokens and labels i32 in [0, 256)).
# Dropout masks depend on (seed, step, global element index), so the same
# example draws the same mask whatever the replica count.
use nn

fn gpt_block(x: f32[b, t, d], heads: int, rate: float) {
  a = multi_head_attention(layer_norm(x, epsilon: 1e-5), heads: heads, key_dim: d / heads,
                           causal: true, dropout: rate)
  x = x + dropout(a, rate)
  m = dense(dense(layer_norm(x, epsilon: 1e-5), 4 * d, activation: gelu), d)
  return x + dropout(m, rate)
}

model char_gpt_small {
  input tokens: i32[batch, 16]
  input label: i32[batch, 16]

  x = positional_embedding(embedding(tokens, 256, 32), 16)
  for i in range(2) {
    x = gpt_block(x, 2, 0.1)
  }
  logits = dense(layer_norm(x, epsilon: 1e-5), 256)

  loss              = sparse_softmax_cross_entropy(logits, label)
  metric perplexity = perplexity(logits, label)
  output logits
}

train char_gpt_small {
  optimizer = adamw(learning_rate: cosine_decay(1e-4, decay_steps: 20, alpha: 0.1,
                                                warmup_target: 0.003, warmup_steps: 5))
  batch     = 16 per replica
}
