use nn

fn project(x: f32[b, k], w: f32[n, m]) {
  return prim.matmul(x, w)
}

model m {
  input x: f32[batch, 8]
  input label: i32[batch]
  param w: f32[4, 10] = glorot_uniform
  logits = project(x, w)
  loss = sparse_softmax_cross_entropy(logits, label)
}
