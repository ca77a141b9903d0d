# sync_bn.mg - batch_norm(sync: true), statistics over the global batch: 2 and 4
# devices must train what 1 device trains (tests/train.cmake)
use nn

# no biases before batch_norm (it removes them: their gradient is rounding noise)
fn conv(x: f32[b, h, w, cin], filters: int) {
  param kernel: f32[3, 3, cin, filters] = glorot_uniform
  return prim.conv2d(x, kernel)
}

fn linear(x: f32[b, k], units: int) {
  param kernel: f32[k, units] = glorot_uniform
  return prim.matmul(x, kernel)
}

model sync_bn {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = relu(batch_norm(conv(image, 8), sync: true))
  x = max_pool2d(x, 2)
  x = relu(batch_norm(linear(flatten(x), 32), sync: true))
  logits = dense(x, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train sync_bn {
  optimizer = sgd(learning_rate: 0.02)
  batch = 64 global
}
