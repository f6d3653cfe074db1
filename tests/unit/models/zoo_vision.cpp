// The zoo's vision models against PyTorch: ResNet-18, MobileNetV2, a UNet, a ViT (zoo_models.hpp;
// harness: zoo.hpp).
#include "zoo.hpp"

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
