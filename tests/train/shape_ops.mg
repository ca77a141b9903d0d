# shape_ops.mg - the shape layers of issue 12 (split, concat, upsampling2d,
# zero_padding2d, transpose, slice, global pooling, layer_norm) in one model:
# 2 and 4 devices must train what 1 device trains (tests/train.cmake)
use nn

model shape_ops {
  input image: f32[batch, 28, 28, 1]
  input label: i32[batch]
  x = conv2d(image, 8, 3, strides: 2, padding: "same", activation: relu)  # [b, 14, 14, 8]
  a, b = split(x, 2)                                                      # [b, 14, 14, 4] each
  x = concat([a, upsampling2d(max_pool2d(b, 2))])                         # [b, 14, 14, 8]
  x = zero_padding2d(x, padding: [[1, 0], [0, 1]])                        # [b, 15, 15, 8]
  x = transpose(x, perm: [0, 2, 1, 3])
  x = slice(x, begin: [0, 1, 0, 0], size: [-1, 14, 14, -1])               # [b, 14, 14, 8]
  x = conv2d(x, 8, 3, strides: 2, activation: relu)                       # [b, 6, 6, 8]
  g = concat([global_average_pool2d(x), global_max_pool2d(x), flatten(x)])
  h = layer_norm(dense(g, 32, activation: relu))
  logits = dense(h, 10)
  loss = sparse_softmax_cross_entropy(logits, label)
  metric accuracy = sparse_categorical_accuracy(logits, label)
}

train shape_ops {
  optimizer = adam
  batch = 64 global
}
