// The zoo's vision models, written as a user ports them from PyTorch (tools/zoo_reference.py has
// the PyTorch side): ResNet-18, MobileNetV2, a UNet, a ViT. Harness: zoo.hpp.
#include "zoo.hpp"

namespace zoo {
// ---- ResNet-18 (torchvision's structure, widths 4/8/16/32) ----------------------------------------
template <index_t In, index_t Out, index_t S>
using downsample_t = nn::Sequential<nn::Conv2d<In, Out, 1, conv2d_options{.stride = {S, S}, .bias = false}>, nn::BatchNorm2d<Out>>;

// (a template's members are declared with BOOST_HANA_DEFINE_STRUCT: ADAPT_STRUCT's macro argument
// cannot hold a template-id with commas)
template <index_t In, index_t Out, index_t S>
struct basic_block {
  using conv1_t = nn::Conv2d<In, Out, 3, conv2d_options{.stride = {S, S}, .padding = {1, 1}, .bias = false}>;
  using conv2_t = nn::Conv2d<Out, Out, 3, conv2d_options{.padding = {1, 1}, .bias = false}>;
  using bn_t = nn::BatchNorm2d<Out>;
  BOOST_HANA_DEFINE_STRUCT(basic_block, (conv1_t, conv1), (bn_t, bn1), (nn::ReLU, relu), (conv2_t, conv2), (bn_t, bn2));
  template <class X>
  auto operator()(const X& x) const {
    const auto y = bn2(conv2(relu(bn1(conv1(x)))));
    return relu(add(y, x));
  }
};
template <index_t In, index_t Out, index_t S>
struct down_block {  // (a BasicBlock whose shortcut is torchvision's `downsample`)
  using conv1_t = nn::Conv2d<In, Out, 3, conv2d_options{.stride = {S, S}, .padding = {1, 1}, .bias = false}>;
  using conv2_t = nn::Conv2d<Out, Out, 3, conv2d_options{.padding = {1, 1}, .bias = false}>;
  using bn_t = nn::BatchNorm2d<Out>;
  using down_t = downsample_t<In, Out, S>;
  BOOST_HANA_DEFINE_STRUCT(down_block, (conv1_t, conv1), (bn_t, bn1), (nn::ReLU, relu), (conv2_t, conv2), (bn_t, bn2),
                           (down_t, downsample));
  template <class X>
  auto operator()(const X& x) const {
    const auto y = bn2(conv2(relu(bn1(conv1(x)))));
    return relu(add(y, downsample(x)));
  }
};

struct resnet18 {
  nn::Conv2d<3, 4, 7, conv2d_options{.stride = {2, 2}, .padding = {3, 3}, .bias = false}> conv1;
  nn::BatchNorm2d<4> bn1;
  nn::ReLU relu;
  nn::MaxPool2d<pool2d_options{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}> maxpool;
  nn::Sequential<basic_block<4, 4, 1>, basic_block<4, 4, 1>> layer1;
  nn::Sequential<down_block<4, 8, 2>, basic_block<8, 8, 1>> layer2;
  nn::Sequential<down_block<8, 16, 2>, basic_block<16, 16, 1>> layer3;
  nn::Sequential<down_block<16, 32, 2>, basic_block<32, 32, 1>> layer4;
  nn::AdaptiveAvgPool2d<1> avgpool;
  nn::Linear<32, 10> fc;
  template <class X>
  auto operator()(const X& x) const {
    const auto h = layer4(layer3(layer2(layer1(maxpool(relu(bn1(conv1(x))))))));
    return fc(flatten<1>(avgpool(h)));
  }
};

// ---- MobileNetV2 (torchvision's structure) ---------------------------------------------------------
template <index_t In, index_t Out, index_t K, index_t S = 1, index_t G = 1>
using conv_bn_relu = nn::Sequential<nn::Conv2d<In, Out, K, conv2d_options{.stride = {S, S}, .padding = {(K - 1) / 2, (K - 1) / 2}, .groups = G, .bias = false}>,
                                    nn::BatchNorm2d<Out>, nn::ReLU6>;

template <index_t In, index_t Out, index_t S, index_t T>
struct inverted_residual {
  static constexpr index_t hidden = In * T;
  using depthwise = conv_bn_relu<hidden, hidden, 3, S, hidden>;
  using project = nn::Conv2d<hidden, Out, 1, conv2d_options{.bias = false}>;
  using conv_t = std::conditional_t<T == 1, nn::Sequential<depthwise, project, nn::BatchNorm2d<Out>>,
                                    nn::Sequential<conv_bn_relu<In, hidden, 1>, depthwise, project, nn::BatchNorm2d<Out>>>;
  BOOST_HANA_DEFINE_STRUCT(inverted_residual, (conv_t, conv));
  template <class X>
  auto operator()(const X& x) const {
    if constexpr (S == 1 && In == Out) return add(x, conv(x));
    else return conv(x);
  }
};

struct mobilenet_v2 {
  nn::Sequential<conv_bn_relu<3, 8, 3, 2>, inverted_residual<8, 8, 1, 1>, inverted_residual<8, 12, 2, 6>,
                 inverted_residual<12, 12, 1, 6>, inverted_residual<12, 16, 2, 6>, inverted_residual<16, 16, 1, 6>,
                 conv_bn_relu<16, 32, 1>>
      features;
  nn::Sequential<nn::Dropout, nn::Linear<32, 10>> classifier;
  template <class X>
  auto operator()(const X& x) const {
    return classifier(flatten<1>(adaptive_avg_pool2d<1, 1>(features(x))));
  }
};

// ---- UNet (two levels, ConvTranspose2d up-convolutions, skip concatenations) -----------------------
template <index_t In, index_t Out>
struct double_conv {
  using block_t = nn::Sequential<nn::Conv2d<In, Out, 3, conv2d_options{.padding = {1, 1}, .bias = false}>, nn::BatchNorm2d<Out>, nn::ReLU,
                                 nn::Conv2d<Out, Out, 3, conv2d_options{.padding = {1, 1}, .bias = false}>, nn::BatchNorm2d<Out>, nn::ReLU>;
  BOOST_HANA_DEFINE_STRUCT(double_conv, (block_t, block));
  template <class X>
  auto operator()(const X& x) const {
    return block(x);
  }
};

struct unet {
  double_conv<3, 8> enc1;
  double_conv<8, 16> enc2;
  double_conv<16, 32> bottleneck;
  nn::ConvTranspose2d<32, 16, 2, conv_transpose2d_options{.stride = 2}> up2;
  double_conv<32, 16> dec2;
  nn::ConvTranspose2d<16, 8, 2, conv_transpose2d_options{.stride = 2}> up1;
  double_conv<16, 8> dec1;
  nn::Conv2d<8, 2, 1> out;
  template <class X>
  auto operator()(const X& x) const {
    constexpr pool2d_options half{.kernel = {2, 2}};
    const auto e1 = enc1(x);
    const auto e2 = enc2(max_pool2d<half>(e1));
    const auto b = bottleneck(max_pool2d<half>(e2));
    const auto d2 = dec2(cat<1>(tensors(up2(b), e2)));
    const auto d1 = dec1(cat<1>(tensors(up1(d2), e1)));
    return out(d1);
  }
};

// ---- ViT (patch embedding, class token, position table, pre-norm encoder) -------------------------
struct vit {
  nn::Conv2d<3, 16, 4, conv2d_options{.stride = {4, 4}}> patch_embed;
  parameter<f32, fix<1>, fix<1>, fix<16>> cls_token;
  parameter<f32, fix<1>, fix<65>, fix<16>> pos_embed;
  nn::TransformerEncoder<nn::TransformerEncoderLayer<16, 2, 32, nn::activation::gelu, true, true>, 2> encoder;
  nn::LayerNorm<16> norm;
  nn::Linear<16, 10> head;
  template <class X>
  auto operator()(const X& x) const {
    const auto b = x.shape().template get<0>();
    const auto p = transpose<1, 2>(flatten<2>(patch_embed(x)));                                  // [B, 64, 16]
    const auto t = add(cat<1>(tensors(expand(cls_token, reshape_to(b, 1_c, 16_c)), p)), pos_embed);  // cls_token.expand(B, -1, -1)
    return head(select<1>(norm(encoder(t)), 0));
  }
};
}  // namespace zoo
BOOST_HANA_ADAPT_STRUCT(zoo::resnet18, conv1, bn1, relu, maxpool, layer1, layer2, layer3, layer4, avgpool, fc);
BOOST_HANA_ADAPT_STRUCT(zoo::mobilenet_v2, features, classifier);
BOOST_HANA_ADAPT_STRUCT(zoo::unet, enc1, enc2, bottleneck, up2, dec2, up1, dec1, out);
BOOST_HANA_ADAPT_STRUCT(zoo::vit, patch_embed, cls_token, pos_embed, encoder, norm, head);

using image = zoo::tensor<zoo::f32, zoo::batch, zoo::fix<3>, zoo::fix<32>, zoo::fix<32>>;

TEST_CASE("zoo: ResNet-18 (bias-free convolutions, batch norm, downsample shortcuts) equals PyTorch, exported, saved, differentiated") {
  zoo::resnet18 m;
  zoo::check_model<image>(m, "resnet18");
}

TEST_CASE("zoo: MobileNetV2 (depthwise convolutions, ReLU6, inverted residuals) equals PyTorch, exported, saved, differentiated") {
  zoo::mobilenet_v2 m;
  zoo::check_model<image>(m, "mobilenet_v2");
}

TEST_CASE("zoo: a UNet (up-convolutions, skip concatenations) equals PyTorch, exported, saved, differentiated") {
  zoo::unet m;
  zoo::check_model<zoo::tensor<zoo::f32, zoo::batch, zoo::fix<3>, zoo::fix<16>, zoo::fix<16>>>(m, "unet");
}

TEST_CASE("zoo: a ViT (class token expanded to the batch, position table, pre-norm encoder) equals PyTorch, exported, saved, differentiated") {
  zoo::vit m;
  zoo::check_model<image>(m, "vit");
}
