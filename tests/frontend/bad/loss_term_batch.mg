use nn

model m {
  input x: f32[batch, 8]
  input label: i32[batch]
  logits = dense(x, 4)
  loss = sparse_softmax_cross_entropy(logits, label)
  loss += prim.reduce_sum(prim.reshape(logits, size(logits)), axes: 1)
}
