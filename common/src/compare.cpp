#include "kit/compare.h"

#include <iomanip>
#include <sstream>

namespace kit {

std::string describe_mismatches(const std::string& what, const Comparison& cmp, const Tolerance& tol,
                                const Shape& shape, const Launch* launch) {
  std::ostringstream out;
  out << std::setprecision(9);
  out << what << ": " << cmp.mismatches << " of " << cmp.count << " elements wrong";
  if (cmp.unwritten > 0) out << " (" << cmp.unwritten << " never written)";
  if (launch) out << "; launch " << describe_launch(*launch);
  out << "\n";
  for (const Mismatch& m : cmp.first) {
    out << "  element " << describe_location(shape, m.index) << ": expected " << m.expected
        << ", got ";
    if (m.unwritten)
      out << "nothing (never written)";
    else
      out << m.got;
    if (launch) out << "; owner " << describe_owner(expected_owner(shape, *launch, m.index));
    out << "\n";
  }
  if (cmp.mismatches > cmp.first.size())
    out << "  ... and " << (cmp.mismatches - cmp.first.size()) << " more\n";
  out << "  max abs error " << cmp.max_abs_error << ", max rel error " << cmp.max_rel_error
      << " over written elements\n";
  out << "  tolerance: abs " << tol.abs << " + rel " << tol.rel << " (" << tol.reason << ")";
  return out.str();
}

std::string describe_guard_writes(const std::vector<GuardHit>& hits, std::size_t n,
                                  std::size_t max_listed) {
  std::ostringstream out;
  out << "wrote " << hits.size() << " element" << (hits.size() == 1 ? "" : "s")
      << " outside the output (n = " << n << "): ";
  for (std::size_t i = 0; i < hits.size() && i < max_listed; ++i) {
    const long long off = hits[i].offset;
    if (i) out << ", ";
    out << "offset " << off;
    if (off < 0)
      out << " (" << -off << " before element 0)";
    else
      out << " (" << (off - static_cast<long long>(n) + 1) << " past the end)";
  }
  if (hits.size() > max_listed) out << ", ...";
  return out.str();
}

}  // namespace kit
