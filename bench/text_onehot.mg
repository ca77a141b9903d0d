# text_onehot.mg - the same text classifier as text_embedding.mg through the
# workaround of issue 13's first paragraph: the embedding as one_hot(tokens,
# 10000) [b * 64, 10000] times a [10000, 64] table (bench/text_classifier.sh)
use nn

# the table's rows picked by a dense matmul: embedding's result, at the cost
# of a [n, input_dim] one-hot tensor and a [n, input_dim] x [input_dim, output_dim] product
fn onehot_embedding(x: i32[b, t], input_dim: int, output_dim: int) {
  param embeddings: f32[input_dim, output_dim] = random_normal(stddev: 0.05)
  rows = matmul(one_hot(prim.reshape(x, b * t), input_dim), embeddings)
  return prim.reshape(rows, b, t, output_dim)
}

model text_onehot {
  input tokens: i32[batch, 64]
  input label: i32[batch]
  e = onehot_embedding(tokens, 10000, 64)
  h = dense(prim.reduce_mean(e, axes: 2), 64, activation: relu)
  logits = dense(h, 2)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train text_onehot {
  optimizer = adam(learning_rate: 0.001)
  batch = 32 per replica
}
