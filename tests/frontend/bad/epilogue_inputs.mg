# issue 14: an epilogue takes (a, b, bias) or (a, b, bias, residual)
model m {
  input x: f32[batch, 4]
  input label: i32[batch]
  w = prim.broadcast_to(prim.reshape(prim.reduce_sum(x, axes: 3), 1, 1), 4, 3)
  y = prim.matmul_epilogue(x, w)
  loss = prim.reduce_mean(y, axes: 3)
}
