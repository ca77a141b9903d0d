# no_train.mg - a model without a train block: batch 1; output by name.
model plain {
  input x: f32[batch, 4]
  param w: f32[4, 3] = glorot_uniform
  param b: f32[3] = zeros
  y = prim.matmul(x, w) + b
  output y
}
