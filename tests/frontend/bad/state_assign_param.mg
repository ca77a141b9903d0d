use nn
model m {
  input x: f32[batch, 4]
  param w: f32[4] = ones
  a = prim.assign(w, w * 2.0)
  y = x * w
  output y
}
