model m {
  input x: f32[batch, 8]
  input label: f32[batch]
  y = prim.sparse_xent(x, label)
  output y
}
