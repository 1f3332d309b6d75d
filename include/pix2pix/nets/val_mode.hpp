// How a trained generator runs when it is validated or used: eval (batch norm's running
// statistics, no dropout) or train (the batch's statistics, dropout on: the reference's --phase
// quirk some runs were validated in). A run records it; translate and evaluate default to it.
#pragma once

#include <string>

namespace pix2pix::nets {

enum class ValMode { eval, train };
ValMode parse_val_mode(const std::string& text);  // UsageError naming --val-mode otherwise
std::string to_string(ValMode mode);

}  // namespace pix2pix::nets
