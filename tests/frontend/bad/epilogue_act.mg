# issue 14: an epilogue activation outside none, relu, tanh, sigmoid
model m {
  input x: f32[batch, 4]
  input label: i32[batch]
  w = prim.reshape(prim.reduce_sum(x, axes: 3), 1, 1)
  b = prim.reshape(prim.reduce_sum(x, axes: 3), 1)
  y = prim.matmul_epilogue(x, prim.broadcast_to(w, 4, 3), prim.broadcast_to(b, 3), act: 9)
  loss = prim.reduce_mean(y, axes: 3)
}
