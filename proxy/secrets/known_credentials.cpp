// The table of well-known credential variables. See known_credentials.hpp.
#include "proxy/secrets/known_credentials.hpp"

#include <algorithm>
#include <array>

namespace sandgate::secrets {
namespace {

// Model providers first (an agent's own key), then code hosts, package registries and clouds.
constexpr std::array<KnownCredential, 28> kKnown = {{
    {"ANTHROPIC_API_KEY", "api.anthropic.com", "Anthropic"},
    {"ANTHROPIC_AUTH_TOKEN", "api.anthropic.com", "Anthropic"},
    {"OPENAI_API_KEY", "api.openai.com", "OpenAI"},
    {"CODEX_API_KEY", "api.openai.com", "OpenAI (the Codex CLI's)"},
    {"GEMINI_API_KEY", "generativelanguage.googleapis.com", "Google Gemini"},
    {"GOOGLE_API_KEY", "generativelanguage.googleapis.com", "Google Gemini"},
    {"MISTRAL_API_KEY", "api.mistral.ai", "Mistral"},
    {"GROQ_API_KEY", "api.groq.com", "Groq"},
    {"OPENROUTER_API_KEY", "openrouter.ai", "OpenRouter"},
    {"DEEPSEEK_API_KEY", "api.deepseek.com", "DeepSeek"},
    {"XAI_API_KEY", "api.x.ai", "xAI"},
    {"TOGETHER_API_KEY", "api.together.xyz", "Together"},
    {"FIREWORKS_API_KEY", "api.fireworks.ai", "Fireworks"},
    {"PERPLEXITY_API_KEY", "api.perplexity.ai", "Perplexity"},
    {"COHERE_API_KEY", "api.cohere.com,api.cohere.ai", "Cohere"},
    {"HF_TOKEN", "huggingface.co,router.huggingface.co", "Hugging Face"},
    {"HUGGING_FACE_HUB_TOKEN", "huggingface.co,router.huggingface.co", "Hugging Face"},
    {"GITHUB_TOKEN", "github.com,api.github.com,uploads.github.com", "GitHub"},
    {"GH_TOKEN", "github.com,api.github.com,uploads.github.com", "GitHub"},
    {"GITLAB_TOKEN", "gitlab.com", "GitLab"},
    {"GL_TOKEN", "gitlab.com", "GitLab"},
    {"NPM_TOKEN", "registry.npmjs.org", "npm"},
    {"NODE_AUTH_TOKEN", "registry.npmjs.org", "npm"},
    {"CARGO_REGISTRY_TOKEN", "crates.io", "crates.io"},
    {"TWINE_PASSWORD", "upload.pypi.org", "PyPI"},
    {"AWS_SECRET_ACCESS_KEY", "*.amazonaws.com", "AWS"},
    {"AWS_SESSION_TOKEN", "*.amazonaws.com", "AWS"},
    {"CLOUDFLARE_API_TOKEN", "api.cloudflare.com", "Cloudflare"},
}};

}  // namespace

std::span<const KnownCredential> known_credentials() { return kKnown; }

const KnownCredential* known_credential(std::string_view variable) {
  const auto found = std::find_if(kKnown.begin(), kKnown.end(), [&](const KnownCredential& known) {
    return known.variable == variable;
  });
  return found == kKnown.end() ? nullptr : &*found;
}

std::vector<const KnownCredential*> known_credentials_set(
    const std::function<std::optional<std::string>(const std::string&)>& environment,
    const std::vector<std::string>& named) {
  std::vector<const KnownCredential*> out;
  for (const KnownCredential& known : kKnown) {
    const std::string variable(known.variable);
    if (std::find(named.begin(), named.end(), variable) != named.end()) {
      continue;
    }
    if (const auto value = environment(variable); value && !value->empty()) {
      out.push_back(&known);
    }
  }
  return out;
}

}  // namespace sandgate::secrets
