use nn

model m {
  param v: f32[8] = glorot_uniform
  y = dense(v, 4)
  output y
}
