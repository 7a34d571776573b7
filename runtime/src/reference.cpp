// The CPU reference in float64, and host encoding of values into storage dtypes.
#include "hipgn/reference.hpp"
#include "hipgn/storage.hpp"

#include <cmath>
#include <algorithm>
#include <cstring>

namespace hipgn {

std::int64_t element_offset(const Problem& p, std::int64_t n, std::int64_t c, std::int64_t s) {
  const std::int64_t hw = p.spatial_size();
  return p.layout == Layout::channels_first ? (n * p.c + c) * hw + s : (n * hw + s) * p.c + c;
}

namespace {
// The channels [first, end) of group g (the last group of uneven groups takes the rest).
struct GroupChannels {
  std::int64_t first, end;
  GroupChannels(const Problem& p, std::int64_t g)
      : first(g * p.channels_per_group()), end(g == p.groups - 1 ? p.c : (g + 1) * p.channels_per_group()) {}
};
}  // namespace

void reference_fwd(const Problem& p, const double* x, const double* gamma, const double* beta, double* y,
                   double* mean, double* rstd) {
  const std::int64_t hw = p.spatial_size();
  for (std::int64_t n = 0; n < p.n; ++n) {
    for (std::int64_t g = 0; g < p.groups; ++g) {
      const GroupChannels ch(p, g);
      // two passes in float64: the mean, then the mean squared deviation (biased variance)
      double sum = 0;
      for (std::int64_t c = ch.first; c < ch.end; ++c)
        for (std::int64_t s = 0; s < hw; ++s) sum += x[element_offset(p, n, c, s)];
      const double count = double((ch.end - ch.first) * hw), m = sum / count;
      double sq = 0;
      for (std::int64_t c = ch.first; c < ch.end; ++c)
        for (std::int64_t s = 0; s < hw; ++s) {
          const double d = x[element_offset(p, n, c, s)] - m;
          sq += d * d;
        }
      const double r = 1.0 / std::sqrt(sq / count + double(p.eps));
      if (mean) mean[n * p.groups + g] = m;
      if (rstd) rstd[n * p.groups + g] = r;
      for (std::int64_t c = ch.first; c < ch.end; ++c) {
        const double ga = gamma ? gamma[c] : 1.0, be = beta ? beta[c] : 0.0;
        for (std::int64_t s = 0; s < hw; ++s) {
          const std::int64_t i = element_offset(p, n, c, s);
          double z = ga * (x[i] - m) * r + be;
          if (p.act == Activation::swish) z = z / (1.0 + std::exp(-double(p.swish_beta) * z));
          y[i] = z;
        }
      }
    }
  }
}

void reference_bwd(const Problem& p, const double* x, const double* dy, const double* gamma, const double* beta,
                   double* dx, double* dgamma, double* dbeta, double* dgamma_abs, double* dbeta_abs) {
  const std::int64_t hw = p.spatial_size();
  std::vector<double> mean(std::size_t(p.num_groups())), rstd(mean.size());
  Problem fp = p;
  fp.act = Activation::none;
  std::vector<double> y(std::size_t(p.elements()));
  reference_fwd(fp, x, nullptr, nullptr, y.data(), mean.data(), rstd.data());  // y = xhat
  for (double* out : {dgamma, dbeta, dgamma_abs, dbeta_abs})
    if (out) std::fill(out, out + p.c, 0.0);
  const double s = double(p.swish_beta);
  std::vector<double> dyp(std::size_t(p.last_group_channels() * hw));  // the widest group
  for (std::int64_t n = 0; n < p.n; ++n) {
    for (std::int64_t g = 0; g < p.groups; ++g) {
      const GroupChannels ch(p, g);
      const double count = double((ch.end - ch.first) * hw);
      double a = 0, b = 0;
      for (std::int64_t c = ch.first, k = 0; c < ch.end; ++c) {
        const double ga = gamma ? gamma[c] : 1.0, be = beta ? beta[c] : 0.0;
        for (std::int64_t sp = 0; sp < hw; ++sp, ++k) {
          const std::int64_t i = element_offset(p, n, c, sp);
          const double xhat = y[std::size_t(i)];
          double d = dy[i];
          if (p.act == Activation::swish) {  // d/dz z sigmoid(s z) = sig (1 + s z (1 - sig))
            const double z = ga * xhat + be, sig = 1.0 / (1.0 + std::exp(-s * z));
            d *= sig * (1.0 + s * z * (1.0 - sig));
          }
          dyp[std::size_t(k)] = d;
          a += ga * d;
          b += ga * d * xhat;
          if (dgamma) dgamma[c] += d * xhat;
          if (dbeta) dbeta[c] += d;
          if (dgamma_abs) dgamma_abs[c] += std::fabs(d * xhat);
          if (dbeta_abs) dbeta_abs[c] += std::fabs(d);
        }
      }
      if (!dx) continue;
      const double r = rstd[std::size_t(n * p.groups + g)];
      for (std::int64_t c = ch.first, k = 0; c < ch.end; ++c) {
        const double ga = gamma ? gamma[c] : 1.0;
        for (std::int64_t sp = 0; sp < hw; ++sp, ++k) {
          const std::int64_t i = element_offset(p, n, c, sp);
          dx[i] = r * (ga * dyp[std::size_t(k)] - a / count - y[std::size_t(i)] * b / count);
        }
      }
    }
  }
}

std::vector<std::uint8_t> encode(DataType t, const std::vector<double>& v) {
  std::vector<std::uint8_t> out(v.size() * size_of(t));
  for (std::size_t i = 0; i < v.size(); ++i) {
    const float f = static_cast<float>(v[i]);  // rounds through float: exact for what decode returns
    if (t == DataType::f32) std::memcpy(&out[i * 4], &f, 4);
    else {
      const std::uint16_t b = t == DataType::f16 ? from_float<f16_t>(f).bits : from_float<bf16_t>(f).bits;
      std::memcpy(&out[i * 2], &b, 2);
    }
  }
  return out;
}

std::vector<double> decode(DataType t, const void* bytes, std::size_t count) {
  std::vector<double> out(count);
  const auto* b = static_cast<const std::uint8_t*>(bytes);
  for (std::size_t i = 0; i < count; ++i) {
    if (t == DataType::f32) {
      float f;
      std::memcpy(&f, b + i * 4, 4);
      out[i] = f;
    } else {
      std::uint16_t h;
      std::memcpy(&h, b + i * 2, 2);
      out[i] = t == DataType::f16 ? to_float(f16_t{h}) : to_float(bf16_t{h});
    }
  }
  return out;
}

}  // namespace hipgn
