// See Note [batch norm over too few images] (batch_norm_warning.hpp).
#include "pix2pix/nets/batch_norm_warning.hpp"

namespace pix2pix::nets {

std::string few_images_warning(Norm norm, std::int64_t images, bool eval_validation, const std::string& ways_out) {
  if (norm != Norm::batch || !eval_validation || images >= kFewImages) return "";
  return "warning: batch norm normalises over " + std::to_string(images) + " image" + (images == 1 ? "" : "s") +
         " at a time, while validation runs in eval mode with running statistics of such batches: what it scores "
         "is not the network training sees (with 1 image batch norm is instance norm), and early stopping "
         "follows that score; " +
         ways_out + " avoid it";
}

}  // namespace pix2pix::nets
