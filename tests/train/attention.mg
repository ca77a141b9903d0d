# attention.mg - issue 13's attention layers without dropout (eval and train
# compute the same function): a positional embedding, a causal and a full
# multi_head_attention (value_dim != key_dim) with layer_norm, a gelu MLP and
# per-token logits; the whole model's gradient on the CPU runtime against
# central differences (tests/train.cmake, --classes 7: tokens and labels in [0, 7))
use nn

model attention {
  input tokens: i32[batch, 5]
  input label: i32[batch, 5]
  x = positional_embedding(embedding(tokens, 7, 8, embeddings_initializer: random_normal(stddev: 0.5)), 6)
  x = x + multi_head_attention(layer_norm(x), heads: 2, key_dim: 4, causal: true)
  x = x + multi_head_attention(layer_norm(x), heads: 3, key_dim: 2, value_dim: 3)
  x = x + dense(dense(layer_norm(x), 16, activation: gelu), 8)
  logits = dense(x, 7)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric perplexity = perplexity(logits, label)
}

train attention {
  optimizer = adam(learning_rate: 0.01)
  batch = 64 global
}
