# frontend: lexer, parser and elaboration. A driver elaborates a file and
# prints a summary (good programs) or the diagnostics (bad programs, compared
# exactly with tests/frontend/bad/NAME.err).
set(FE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/frontend)
add_executable(test_elab ${FE_DIR}/elab_main.c)
target_link_libraries(test_elab PRIVATE mgc_passes)

function(frontend_good name file)
  cmake_parse_arguments(G "" "" "ARGS;EXPECT" ${ARGN})
  string(JOIN "|" expect ${G_EXPECT})
  add_test(NAME frontend_${name}
           COMMAND ${CMAKE_COMMAND} -DELAB=$<TARGET_FILE:test_elab> -DFILE=${file} -DSTDLIB=${MGC_SRC}/stdlib
                   "-DARGS=${G_ARGS}" "-DEXPECT=${expect}" -P ${FE_DIR}/run_good.cmake)
endfunction()

frontend_good(mnist_cnn ${MGC_SRC}/examples/mnist_cnn.mg EXPECT
  "model mnist_cnn (${MGC_SRC}/examples/mnist_cnn.mg)"
  "input image f32[64,28,28,1]"
  "input label i32[64]"
  "param conv2d/kernel f32[3,3,1,32] 288 init=glorot_uniform fan_in=9 fan_out=288"
  "param conv2d/bias f32[32] 32 init=zeros fan_in=32 fan_out=32"
  "param dense/kernel f32[5408,128] 692224 init=glorot_uniform fan_in=5408 fan_out=128"
  "param dense/bias f32[128] 128 init=zeros fan_in=128 fan_out=128"
  "param dense_1/kernel f32[128,10] 1280 init=glorot_uniform fan_in=128 fan_out=10"
  "param dense_1/bias f32[10] 10 init=zeros fan_in=10 fan_out=10"
  "trainable parameters 693962"
  "loss sparse_xent f32[64]"
  "metric accuracy argmax_match f32[64]"
  "output add f32[64,10]"
  "train yes optimizer adam lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-07 weight_decay=0 momentum=0 rho=0 nesterov=0"
  "batch 64 per replica, 64 global")
frontend_good(mnist_cnn_4_replicas ${MGC_SRC}/examples/mnist_cnn.mg ARGS 4 EXPECT
  "input image f32[64,28,28,1]" "batch 64 per replica, 256 global" "trainable parameters 693962")
frontend_good(mnist_cnn_global_batch ${MGC_SRC}/examples/mnist_cnn.mg ARGS 2 100 EXPECT
  "input image f32[50,28,28,1]" "batch 50 per replica, 100 global" "loss sparse_xent f32[50]")
frontend_good(mlp ${MGC_SRC}/examples/mlp.mg EXPECT
  "param dense/kernel f32[784,256] 200704 init=glorot_uniform fan_in=784 fan_out=256"
  "param dense/bias f32[256] 256 init=zeros fan_in=256 fan_out=256"
  "param dense_1/kernel f32[256,10] 2560 init=glorot_uniform fan_in=256 fan_out=10"
  "param dense_1/bias f32[10] 10 init=zeros fan_in=10 fan_out=10"
  "trainable parameters 203530" "batch 64 per replica, 64 global")
frontend_good(features ${FE_DIR}/good/features.mg ARGS 3 EXPECT
  "input image f32[32,32,32,3]"
  "param conv2d/kernel f32[5,5,3,8] 600 init=he_normal fan_in=75 fan_out=200"
  "param conv2d_1/kernel f32[3,3,8,16] 1152 init=glorot_uniform fan_in=72 fan_out=144"
  "param block/dense/kernel f32[256,256] 65536 init=glorot_uniform fan_in=256 fan_out=256"
  "param block/dense_1/kernel f32[256,128] 32768 init=glorot_uniform fan_in=256 fan_out=128"
  "param block_1/dense/kernel f32[128,40] 5120 init=glorot_uniform fan_in=128 fan_out=40"
  "param block_1/dense_1/bias f32[20] 20 init=zeros fan_in=20 fan_out=20"
  "param dense/kernel f32[20,10] 200 init=glorot_uniform fan_in=20 fan_out=10"
  "param scale f32[10] 10 init=ones fan_in=10 fan_out=10"
  "trainable parameters 106664"
  "loss reduce_mean f32[32]"
  "output sub f32[32,10]"
  "train yes optimizer sgd lr=0.05 beta1=0.9 beta2=0.999 epsilon=1e-07 weight_decay=0 momentum=0.9 rho=0 nesterov=1"
  "batch 32 per replica, 96 global")
frontend_good(optimizer_defaults ${FE_DIR}/good/optimizers.mg EXPECT
  "train yes optimizer adamw lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-07 weight_decay=0.004 momentum=0 rho=0 nesterov=0"
  "batch 8 per replica, 8 global")
# issue 12: Keras 3 defaults of adagrad, nadam and lamb; clipnorm and global_clipnorm
frontend_good(optimizer_adagrad ${FE_DIR}/good/opt_adagrad.mg EXPECT
  "train yes optimizer adagrad lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-07 weight_decay=0 momentum=0 rho=0 nesterov=0"
  "initial_accumulator_value=0.1" "clipnorm=2 global_clipnorm=0")
frontend_good(optimizer_nadam ${FE_DIR}/good/opt_nadam.mg EXPECT
  "train yes optimizer nadam lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-07 weight_decay=0 momentum=0 rho=0 nesterov=0")
frontend_good(optimizer_lamb ${FE_DIR}/good/opt_lamb.mg EXPECT
  "train yes optimizer lamb lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-06 weight_decay=0 momentum=0 rho=0 nesterov=0"
  "clipnorm=0 global_clipnorm=1.5")
frontend_good(no_train ${FE_DIR}/good/no_train.mg EXPECT
  "train no optimizer adam lr=0.001 beta1=0.9 beta2=0.999 epsilon=1e-07 weight_decay=0 momentum=0 rho=0 nesterov=0"
  "batch 1 per replica, 1 global" "output add f32[1,3]" "param w f32[4,3] 12 init=glorot_uniform fan_in=4 fan_out=3")
# convolution layers: each count is Keras' (Conv2D 3*5*3*8+8 = 368, Conv2D groups 4
# no bias 3*3*2*16 = 288, DepthwiseConv2D x2 3*3*16*2+32 = 320, SeparableConv2D
# 288+768+24 = 1080, Conv2DTranspose 3*3*24*6+6 = 1302 and 2*3*6*4+4 = 148)
frontend_good(conv_layers ${FE_DIR}/good/conv_layers.mg EXPECT
  "param conv2d/kernel f32[3,5,3,8] 360 init=glorot_uniform fan_in=45 fan_out=120"
  "param conv2d/bias f32[8] 8 init=zeros fan_in=8 fan_out=8"
  "param conv2d_1/kernel f32[3,3,2,16] 288 init=glorot_uniform fan_in=18 fan_out=144"
  "param depthwise_conv2d/depthwise_kernel f32[3,3,16,2] 288 init=glorot_uniform fan_in=144 fan_out=18"
  "param depthwise_conv2d/bias f32[32] 32 init=zeros fan_in=32 fan_out=32"
  "param separable_conv2d/depthwise_kernel f32[3,3,32,1] 288 init=glorot_uniform fan_in=288 fan_out=9"
  "param separable_conv2d/pointwise_kernel f32[1,1,32,24] 768 init=glorot_uniform fan_in=32 fan_out=24"
  "param separable_conv2d/bias f32[24] 24 init=zeros fan_in=24 fan_out=24"
  "param conv2d_transpose/kernel f32[3,3,6,24] 1296 init=glorot_uniform fan_in=54 fan_out=216"
  "param conv2d_transpose/bias f32[6] 6 init=zeros fan_in=6 fan_out=6"
  "param conv2d_transpose_1/kernel f32[2,3,4,6] 144 init=glorot_uniform fan_in=24 fan_out=36"
  "param conv2d_transpose_1/bias f32[4] 4 init=zeros fan_in=4 fan_out=4"
  "param dense/kernel f32[1400,10] 14000 init=glorot_uniform fan_in=1400 fan_out=10"
  "trainable parameters 17516")

file(GLOB FE_BAD CONFIGURE_DEPENDS ${FE_DIR}/bad/*.mg)
list(FILTER FE_BAD EXCLUDE REGEX "/lib_[^/]*\\.mg$") # modules the bad programs use
foreach(src ${FE_BAD})
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME frontend_bad_${name}
           COMMAND ${CMAKE_COMMAND} -DELAB=$<TARGET_FILE:test_elab> -DDIR=${FE_DIR} -DNAME=${name}
                   -P ${FE_DIR}/run_bad.cmake)
endforeach()
# issue 12: lists, comparisons, and/or/not, if/else, for (params named per
# iteration), several return values, line breaks inside brackets, a BOM
frontend_good(control ${FE_DIR}/good/control.mg EXPECT
  "param tower/dense/kernel f32[12,16] 192 init=glorot_uniform fan_in=12 fan_out=16"
  "param tower/dense_1/kernel f32[16,12] 192 init=glorot_uniform fan_in=16 fan_out=12"
  "param tower/dense_2/kernel f32[12,10] 120 init=glorot_uniform fan_in=12 fan_out=10"
  "param split_heads/dense_1/kernel f32[10,5] 50 init=glorot_uniform fan_in=10 fan_out=5"
  "param pick/dense/kernel f32[5,8] 40 init=glorot_uniform fan_in=5 fan_out=8"
  "param pick_1/dense/kernel f32[5,6] 30 init=glorot_uniform fan_in=5 fan_out=6"
  "param pick_2/dense/kernel f32[5,4] 20 init=glorot_uniform fan_in=5 fan_out=4"
  "trainable parameters 970"
  "output add f32[4,10]")
# lists grown in place (xs = xs + [x] is linear, not quadratic): every list
# keeps its own elements however they share a buffer
frontend_good(lists ${FE_DIR}/good/lists.mg EXPECT
  "param dense/kernel f32[3,7] 21 init=glorot_uniform fan_in=3 fan_out=7"
  "param dense_1/kernel f32[7,8] 56 init=glorot_uniform fan_in=7 fan_out=8"
  "param dense_2/kernel f32[8,19] 152 init=glorot_uniform fan_in=8 fan_out=19"
  "param dense_3/kernel f32[19,8] 152 init=glorot_uniform fan_in=19 fan_out=8")
# issue 12: params shared by name (reuse: true): one tower's params however
# many calls use them; several named outputs; a weighted sum of losses plus
# regularizer terms keeps one per-example loss vector
frontend_good(sharing ${FE_DIR}/good/sharing.mg ARGS 2 16 EXPECT
  "param tower/dense/kernel f32[5,6] 30 init=glorot_uniform fan_in=5 fan_out=6"
  "param tower/dense/bias f32[6] 6 init=zeros fan_in=6 fan_out=6"
  "param tower/dense_1/kernel f32[6,3] 18 init=glorot_uniform fan_in=6 fan_out=3"
  "param tower/dense_1/bias f32[3] 3 init=zeros fan_in=3 fan_out=3"
  "param head/kernel f32[3,2] 6 init=glorot_uniform fan_in=3 fan_out=2"
  "param dense/kernel f32[3,2] 6 init=glorot_uniform fan_in=3 fan_out=2"
  "trainable parameters 73"
  "output head add f32[8,2]" "output plain add f32[8,2]")
frontend_good(siamese ${MGC_SRC}/tests/train/siamese.mg EXPECT
  "param tower/dense/kernel f32[12,16] 192 init=glorot_uniform fan_in=12 fan_out=16"
  "param tower/dense_1/bias f32[8] 8 init=zeros fan_in=8 fan_out=8"
  "param dense/kernel f32[8,2] 16 init=glorot_uniform fan_in=8 fan_out=2"
  "trainable parameters 362")
frontend_good(losses ${MGC_SRC}/tests/train/losses.mg EXPECT
  "loss add f32[64]" "metric xent sparse_xent f32[64]" "metric mse reduce_mean f32[64]"
  "output logits add f32[64,4]" "output regression add f32[64,3]")
# `use NAME` finds NAME.mg beside the file that says it (before the stdlib)
frontend_good(uses_local ${FE_DIR}/good/modules/uses_local.mg EXPECT
  "param block/dense_1/kernel f32[4,4] 16 init=glorot_uniform fan_in=4 fan_out=4"
  "nodes 10 sources ${FE_DIR}/good/modules/uses_local.mg ${FE_DIR}/good/modules/lib_blocks.mg ${MGC_SRC}/stdlib/nn.mg")
frontend_good(uses_local_first ${FE_DIR}/good/shadow/model.mg EXPECT
  "param dense/local_kernel f32[4,2] 8 init=ones fan_in=4 fan_out=2"
  "nodes 3 sources ${FE_DIR}/good/shadow/model.mg ${FE_DIR}/good/shadow/nn.mg")
frontend_good(conv_regularizer ${FE_DIR}/good/conv_regularizer.mg EXPECT
  "loss add f32[1]" "nodes 28 sources ${FE_DIR}/good/conv_regularizer.mg ${MGC_SRC}/stdlib/nn.mg")

# issue 13: Keras' LSTM / GRU param counts: LSTM 4u(f+u+1) = 1600 and 144, GRU 3u(f+u+2) = 1080
frontend_good(recurrent ${FE_DIR}/good/recurrent.mg EXPECT
  "param lstm/kernel f32[8,64] 512 init=glorot_uniform fan_in=8 fan_out=64"
  "param lstm/recurrent_kernel f32[16,64] 1024 init=orthogonal fan_in=16 fan_out=64"
  "param lstm/bias f32[64] 64 init=unit_forget_bias fan_in=64 fan_out=64"
  "param gru/kernel f32[16,36] 576 init=glorot_uniform fan_in=16 fan_out=36"
  "param gru/recurrent_kernel f32[12,36] 432 init=orthogonal fan_in=12 fan_out=36"
  "param gru/bias f32[2,36] 72 init=zeros fan_in=2 fan_out=36"
  "param lstm_1/kernel f32[8,12] 96 init=glorot_uniform fan_in=8 fan_out=12"
  "param lstm_1/recurrent_kernel f32[3,12] 36 init=orthogonal fan_in=3 fan_out=12"
  "param lstm_1/bias f32[12] 12 init=unit_forget_bias fan_in=12 fan_out=12"
  "trainable parameters 2824"
  "loss reduce_mean f32[4]"
  "metric perplexity exp f32[4]"
  "output mul f32[4,3]")

# issue 13: char_gpt's checkpoint names and shapes: Keras MultiHeadAttention's
# (query/key/value kernels [d, heads, key_dim] with Keras' fans d * heads and
# d * key_dim, biases [heads, key_dim], attention_output kernel [heads, key_dim, d]):
# 3 * (128 * 4 * 32 + 4 * 32) + 4 * 32 * 128 + 128 = 66,048 per layer, as Keras
frontend_good(char_gpt ${MGC_SRC}/examples/char_gpt.mg EXPECT
  "input tokens i32[16,128]" "input label i32[16,128]"
  "param positional_embedding/embeddings f32[128,128] 16384 init=glorot_uniform fan_in=128 fan_out=128"
  "param gpt_block/multi_head_attention/query/kernel f32[128,4,32] 16384 init=glorot_uniform fan_in=512 fan_out=4096"
  "param gpt_block/multi_head_attention/query/bias f32[4,32] 128 init=zeros fan_in=4 fan_out=32"
  "param gpt_block/multi_head_attention/key/kernel f32[128,4,32] 16384 init=glorot_uniform fan_in=512 fan_out=4096"
  "param gpt_block/multi_head_attention/value/bias f32[4,32] 128 init=zeros fan_in=4 fan_out=32"
  "param gpt_block_3/multi_head_attention/attention_output/kernel f32[4,32,128] 16384 init=glorot_uniform fan_in=128 fan_out=512"
  "param gpt_block_3/multi_head_attention/attention_output/bias f32[128] 128 init=zeros fan_in=128 fan_out=128"
  "param dense/kernel f32[128,256] 32768 init=glorot_uniform fan_in=128 fan_out=256"
  "trainable parameters 875520"
  "metric perplexity exp f32[16]")
