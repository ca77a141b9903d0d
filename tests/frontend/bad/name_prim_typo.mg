model m {
  input x: f32[batch, 4]
  y = prim.rleu(x)
  output y
}
