# sequence.mg - issue 13: an embedding, batched matmuls (a dot-product
# attention) and dense on a rank-3 input in one model: 2 and 4 devices must
# train what 1 device trains (tests/train.cmake; --synthetic 10 draws the
# tokens and labels in [0, 10))
use nn

model sequence {
  input tokens: i32[batch, 6]
  input label: i32[batch]
  e = embedding(tokens, 10, 8, embeddings_initializer: random_normal(stddev: 0.5))
  scores = matmul(e, e, transpose_b: true) * 0.35
  context = matmul(softmax(scores), e)
  h = dense(context, 12, activation: tanh)
  logits = dense(flatten(h), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}

train sequence {
  optimizer = adam(learning_rate: 0.01)
  batch = 64 global
}
