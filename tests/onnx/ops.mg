# ops.mg - most op mappings of the ONNX exporter in one inference graph
# (tests/onnx/test_onnx.py compares onnxruntime with mgc predict on it).
use nn

model ops {
  input image: f32[batch, 8, 8, 3]
  input ids: i32[batch, 5]

  a = conv2d(image, filters: 4, kernel: 3, strides: 2, padding: "same", activation: relu)
  t = conv2d_transpose(a, filters: 3, kernel: 3, strides: 2, padding: "same")
  d = depthwise_conv2d(image, kernel: 3, padding: "same")
  u = upsampling2d(max_pool2d(image, 2))
  v = avg_pool2d(image, 3, strides: 1, padding: "same")
  x = concat([t, d, u, v], axis: -1)
  x = batch_norm(x)
  e = elu(x, alpha: 0.7) + leaky_relu(x) + selu(x) + softplus(x) + gelu(x) + silu(x) + hard_sigmoid(x)
  e = e + clip(x, -0.5, 0.5) + abs(x) * erf(x) - minimum(x, 0.2) + pow(square(x) + 1.0, 0.3) + prim.exp(-x)
  e = e + prim.log(1.0 + square(x)) + sqrt(abs(x)) / (1.0 + abs(x))
  p = zero_padding2d(e, [1, 2])
  q = slice(p, [0, 1, 2, 0], [-1, 8, 8, 12])
  h = dense(flatten(transpose(q, [0, 3, 1, 2])), 16, activation: tanh)
  m = global_max_pool2d(e) + reduce_min(e, axis: [1, 2]) + global_average_pool2d(e)
  o = reduce_max(one_hot(ids, 7), axis: 1)
  output y = concat([softmax(h), log_softmax(h), m / 10.0, o], axis: -1)
  output z = softmax(reshape(e, [8, 96]), axis: 1)
}
