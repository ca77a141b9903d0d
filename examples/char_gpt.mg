# char_gpt.mg - a small character-level GPT (decoder-only transformer): bytes
# as tokens (vocabulary 256), context 128, 4 pre-LN blocks of causal
# multi-head self-attention (4 heads of 32) and a 4x gelu MLP, width 128;
# predicts each next byte (label[i] = tokens[i + 1]). 875,520 parameters.
# Train on 2 logical devices with `mgc run --data text:FILE --context 128`.
use nn

# x + attention(LN(x)), then x + MLP(LN(x)); dropout on the attention
# weights and on each residual branch (training only)
fn gpt_block(x: f32[b, t, d], heads: int, rate: float) {
  a = multi_head_attention(layer_norm(x, epsilon: 1e-5), heads: heads, key_dim: d / heads,
                           causal: true, dropout: rate)
  x = x + dropout(a, rate)
  m = dense(dense(layer_norm(x, epsilon: 1e-5), 4 * d, activation: gelu), d)
  return x + dropout(m, rate)
}

model char_gpt {
  input tokens: i32[batch, 128]
  input label: i32[batch, 128]

  x = positional_embedding(embedding(tokens, 256, 128), 128)
  for i in range(4) {
    x = gpt_block(x, 4, 0.1)
  }
  logits = dense(layer_norm(x, epsilon: 1e-5), 256)     # [batch, 128, 256]

  loss              = sparse_softmax_cross_entropy(logits, label)
  metric perplexity = perplexity(logits, label)
  output logits
}

train char_gpt {
  optimizer = adamw(learning_rate: cosine_decay(1e-5, decay_steps: 2000, alpha: 0.1,
                                                warmup_target: 0.001, warmup_steps: 100))
  batch     = 16 per replica
}
