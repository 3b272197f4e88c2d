// The credential stores `run` hides. See credential_stores.hpp.
#include "sandbox-profile/plan/credential_stores.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>

#include "sandbox-profile/plan/resolved_path.hpp"

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

std::string variable(const std::vector<std::string>& environment, std::string_view name) {
  for (const auto& entry : environment) {
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return {};
}

bool inside(const std::string& path, const std::string& folder) {
  return path.size() > folder.size() && path.starts_with(folder) &&
         (folder.back() == '/' || path[folder.size()] == '/');
}

// Whether a file shown inside ~/.ssh holds no private key: a regular file, never a link (which
// could lead anywhere) nor one with a second name (a hard link to a key), at most 1 MiB, and
// nothing in it that marks a private key (PEM's and OpenSSH's `PRIVATE KEY`, PuTTY's header),
// wherever in the file it stands.
bool holds_no_private_key(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (ec || !fs::is_regular_file(status) || fs::hard_link_count(path, ec) != 1 || ec) {
    return false;
  }
  const auto size = fs::file_size(path, ec);
  if (ec || size > 1024 * 1024) {
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  if (!in && !in.eof()) {
    return false;
  }
  return text.find("PRIVATE KEY") == std::string::npos &&
         text.find("PuTTY-User-Key-File") == std::string::npos &&
         (!path.filename().string().ends_with(".pub") ||
          text.find("-----BEGIN ") == std::string::npos);
}

// What ssh reads from ~/.ssh that holds no secret (an allow-list by name, each file checked by
// holds_no_private_key): known_hosts*, config, authorized_keys*, *.pub, and the files of
// config.d (each on its own, at most 4 folders deep and 1000 files: a key kept there by any name
// stays hidden).
void ssh_shown(const fs::path& ssh, std::vector<std::string>& shown) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(ssh, ec)) {
    const std::string name = entry.path().filename().string();
    const bool by_name = name.starts_with("known_hosts") || name == "config" ||
                         name.starts_with("authorized_keys") || name.ends_with(".pub");
    if (by_name && holds_no_private_key(entry.path())) {
      shown.push_back(entry.path().string());
    }
  }
  const fs::path config_d = ssh / "config.d";
  if (!fs::is_directory(fs::symlink_status(config_d, ec))) {
    return;
  }
  std::size_t files = 0;
  for (auto it = fs::recursive_directory_iterator(config_d, ec), end = decltype(it)();
       !ec && it != end && files < 1000; it.increment(ec)) {
    if (it.depth() >= 4) {
      it.disable_recursion_pending();
    }
    if (it->is_regular_file(ec) && holds_no_private_key(it->path())) {
      shown.push_back(it->path().string());
      ++files;
    }
  }
}

// More tools' credential files in the home (a file each, in folders that also hold settings the
// tool needs): AI agents' logins (Codex, Gemini CLI, GitHub Copilot), forges' CLIs (glab, hub),
// package registries (RubyGems, Maven, Gradle, Composer, Poetry, Yarn), object stores and
// databases (s3cmd, boto, MySQL, Databricks, Snowflake), clouds and platforms (doctl, flyctl,
// Pulumi, OpenStack, Linode, Wrangler, Vercel, Netlify, Firebase, Supabase, ngrok, Kaggle,
// Sentry, Helm's repositories), and age's keys for sops.
constexpr const char* kMoreCredentialFiles[] = {
    "/.codex/auth.json",
    "/.gemini/oauth_creds.json",
    "/.gemini/mcp-oauth-tokens.json",
    "/.config/github-copilot/apps.json",
    "/.config/github-copilot/hosts.json",
    "/.config/glab-cli/config.yml",
    "/.config/hub",
    "/.gem/credentials",
    "/.local/share/gem/credentials",
    "/.m2/settings.xml",
    "/.m2/settings-security.xml",
    "/.gradle/gradle.properties",
    "/.config/composer/auth.json",
    "/.composer/auth.json",
    "/.config/pypoetry/auth.toml",
    "/.yarnrc.yml",
    "/.s3cfg",
    "/.boto",
    "/.my.cnf",
    "/.mylogin.cnf",
    "/.databrickscfg",
    "/.snowflake/connections.toml",
    "/.snowflake/config.toml",
    "/.config/doctl/config.yaml",
    "/.fly/config.yml",
    "/.pulumi/credentials.json",
    "/.config/openstack/clouds.yaml",
    "/.config/linode-cli",
    "/.wrangler/config/default.toml",
    "/.config/.wrangler/config/default.toml",
    "/.local/share/com.vercel.cli/auth.json",
    "/.config/netlify/config.json",
    "/.config/configstore/firebase-tools.json",
    "/.supabase/access-token",
    "/.config/ngrok/ngrok.yml",
    "/.kaggle/kaggle.json",
    "/.config/kaggle/kaggle.json",
    "/.sentryclirc",
    "/.config/helm/repositories.yaml",
    "/.config/sops/age/keys.txt",
    // Container and package registries: podman's, buildah's and skopeo's logins, Helm's OCI
    // logins, Bundler's, pip's and conda's (an index or channel URL holds its token), NuGet's,
    // sbt's and Ivy's.
    "/.config/containers/auth.json",
    "/.config/helm/registry/config.json",
    "/.bundle/config",
    "/.config/pip/pip.conf",
    "/.pip/pip.conf",
    "/.condarc",
    "/.conda/.condarc",
    "/.config/conda/.condarc",
    "/.config/conda/condarc",
    "/.nuget/NuGet/NuGet.Config",
    "/.sbt/credentials",
    "/.ivy2/.credentials",
    // Mercurial ([auth] passwords), MinIO's client, s3fs.
    "/.hgrc",
    "/.config/hg/hgrc",
    "/.mc/config.json",
    "/.passwd-s3fs",
    // Platforms' CLIs: Stripe, Hetzner Cloud, Railway, Talos, CircleCI, ngrok's older place,
    // WakaTime.
    "/.config/stripe/config.toml",
    "/.config/hcloud/cli.toml",
    "/.railway/config.json",
    "/.talos/config",
    "/.circleci/cli.yml",
    "/.ngrok2/ngrok.yml",
    "/.wakatime.cfg",
    // Agents and their keys: opencode, goose (without a keyring), llm, aider, a home .env, and
    // Claude Code's ~/.claude.json (a Console sign-in's key, primaryApiKey, and the user's MCP
    // servers with their tokens; with CLAUDE_CONFIG_DIR Claude Code keeps its own copy there).
    "/.local/share/opencode/auth.json",
    "/.config/goose/secrets.yaml",
    "/.config/io.datasette.llm/keys.json",
    "/.aider.conf.yml",
    "/.env",
    "/.claude.json",
    // Histories: the tokens pasted on command lines and into REPLs.
    "/.bash_history",
    "/.zsh_history",
    "/.zhistory",
    "/.local/share/fish/fish_history",
    "/.psql_history",
    "/.mysql_history",
    "/.python_history",
    "/.node_repl_history",
    "/.sqlite_history",
    "/.rediscli_history",
    "/.dbshell",
    "/.mongodb/mongosh/mongosh_repl_history",
    "/.ipython/profile_default/history.sqlite",
};

// More folders that hold nothing but credentials or histories: svn's cached passwords,
// cloudflared's account certificate and tunnels' secrets, atuin's key and history, and
// sandgate's own run logs (the hosts, questions and sentinels of every run).
constexpr const char* kMoreCredentialFolders[] = {
    "/.subversion/auth",
    "/.cloudflared",
    "/.local/share/atuin",
    "/.local/state/sandgate/runs",
};

// Where the XDG variables move a place in the home: a store under ~/.config, ~/.local/share or
// ~/.local/state is under $XDG_CONFIG_HOME, $XDG_DATA_HOME or $XDG_STATE_HOME when they are set.
constexpr std::pair<const char*, const char*> kXdgFolders[] = {
    {"/.config/", "XDG_CONFIG_HOME"},
    {"/.local/share/", "XDG_DATA_HOME"},
    {"/.local/state/", "XDG_STATE_HOME"},
};

// Variables that move one of those tools' folders, and the credential file in it.
constexpr std::pair<const char*, const char*> kFilesInVariableFolders[] = {
    {"CODEX_HOME", "/auth.json"},          {"CLAUDE_CONFIG_DIR", "/.credentials.json"},
    {"GLAB_CONFIG_DIR", "/config.yml"},    {"GRADLE_USER_HOME", "/gradle.properties"},
    {"COMPOSER_HOME", "/auth.json"},       {"PULUMI_HOME", "/credentials.json"},
    {"KAGGLE_CONFIG_DIR", "/kaggle.json"}, {"FLY_CONFIG_DIR", "/config.yml"},
    {"BUNDLE_USER_HOME", "/config"},       {"WAKATIME_HOME", "/.wakatime.cfg"},
    {"LLM_USER_PATH", "/keys.json"},
};

// Variables that name a credential file itself.
constexpr const char* kFileVariables[] = {
    "S3CMD_CONFIG",
    "BOTO_CONFIG",
    "DATABRICKS_CONFIG_FILE",
    "OCI_CLI_CONFIG_FILE",
    "RCLONE_CONFIG",
    "PGPASSFILE",
    "SOPS_AGE_KEY_FILE",
    "OS_CLIENT_CONFIG_FILE",
    "HELM_REPOSITORY_CONFIG",
    "REGISTRY_AUTH_FILE",
    "HELM_REGISTRY_CONFIG",
    "BUNDLE_USER_CONFIG",
    "PIP_CONFIG_FILE",
    "CONDARC",
    "HCLOUD_CONFIG",
    "TALOSCONFIG",
    "HISTFILE",
    "PSQL_HISTORY",
    "MYSQL_HISTFILE",
    "NODE_REPL_HISTORY",
    "PYTHON_HISTORY",
    "SQLITE_HISTORY",
    "REDISCLI_HISTFILE",
};

// Folders in the home that hold nothing but credentials: the clouds' CLIs, Kubernetes, GnuPG's
// private keys, pass, the desktop keyrings, the browsers' profiles (and their snap and flatpak
// installs), OCI's CLI and Bitwarden's.
constexpr const char* kCredentialFolders[] = {"/.aws",
                                              "/.config/gcloud",
                                              "/.azure",
                                              "/.kube",
                                              "/.minikube",
                                              "/.gnupg/private-keys-v1.d",
                                              "/.password-store",
                                              "/.local/share/keyrings",
                                              "/.mozilla",
                                              "/.config/google-chrome",
                                              "/.config/google-chrome-beta",
                                              "/.config/chromium",
                                              "/.config/BraveSoftware",
                                              "/.config/microsoft-edge",
                                              "/.config/vivaldi",
                                              "/snap/firefox",
                                              "/snap/chromium",
                                              "/.var/app/org.mozilla.firefox",
                                              "/.var/app/com.google.Chrome",
                                              "/.var/app/org.chromium.Chromium",
                                              "/.var/app/com.brave.Browser",
                                              "/.oci",
                                              "/.config/Bitwarden CLI"};

// Credential files in the home: netrc, git's and gh's, Docker's, npm's, PyPI's, PostgreSQL's,
// GnuPG's old secret ring, Vault's, Cargo's, Terraform's, rclone's, Hugging Face's and Claude
// Code's.
constexpr const char* kCredentialFiles[] = {"/.netrc",
                                            "/.git-credentials",
                                            "/.config/git/credentials",
                                            "/.docker/config.json",
                                            "/.config/gh/hosts.yml",
                                            "/.npmrc",
                                            "/.pypirc",
                                            "/.pgpass",
                                            "/.gnupg/secring.gpg",
                                            "/.vault-token",
                                            "/.cargo/credentials",
                                            "/.cargo/credentials.toml",
                                            "/.terraformrc",
                                            "/.terraform.d/credentials.tfrc.json",
                                            "/.config/rclone/rclone.conf",
                                            "/.cache/huggingface/token",
                                            "/.huggingface/token",
                                            "/.claude/.credentials.json"};

// On macOS: the keychains, the cookies and the browsers' profiles under ~/Library.
constexpr const char* kMacosFolders[] = {"/Library/Keychains",
                                         "/Library/Cookies",
                                         "/Library/Application Support/Google/Chrome",
                                         "/Library/Application Support/Chromium",
                                         "/Library/Application Support/Firefox",
                                         "/Library/Application Support/BraveSoftware",
                                         "/Library/Application Support/Microsoft Edge",
                                         "/Library/Application Support/Vivaldi"};

// `value` with `$VAR` and `${VAR}` replaced by the variables of `environment` (an unset one is
// empty; a `$` that starts no name stays).
std::string expand_variables(const std::string& value,
                             const std::vector<std::string>& environment) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] != '$' || i + 1 >= value.size()) {
      out += value[i];
      continue;
    }
    const bool braced = value[i + 1] == '{';
    std::size_t start = i + (braced ? 2 : 1);
    std::size_t end = start;
    while (end < value.size() &&
           (std::isalnum(static_cast<unsigned char>(value[end])) != 0 || value[end] == '_')) {
      ++end;
    }
    if (end == start || (braced && (end >= value.size() || value[end] != '}'))) {
      out += value[i];
      continue;
    }
    out += variable(environment, std::string_view(value).substr(start, end - start));
    i = braced ? end : end - 1;
  }
  return out;
}

// The candidates for hiding, before the file system says which exist, and the inputs that name
// them.
class Candidates {
 public:
  Candidates(const std::vector<std::string>& homes, const std::vector<std::string>& environment)
      : homes_(homes), environment_(environment) {}

  void folder(const std::string& path) {
    if (!path.empty()) {
      folders.push_back(resolved_path(path));
    }
  }
  void file(const std::string& path) {
    if (!path.empty()) {
      files.push_back(resolved_path(path));
    }
  }

  // The variable `name`'s path as the tools read it: botocore and others expand `~` and `$VAR`
  // (or `${VAR}`) themselves, so both spellings lead to the store. Empty when unset.
  std::string from(std::string_view name) const {
    std::string value = variable(environment_, name);
    if (!homes_.empty() && (value == "~" || value.starts_with("~/"))) {
      value = homes_.front() + value.substr(1);
    }
    return expand_variables(value, environment_);
  }

  // A place in the home (`relative`: "/.aws"), in each home, and where an XDG variable moves
  // it; `as_folder`: hidden whole, else as a file.
  void in_homes(const char* relative, bool as_folder) {
    const auto add = [&](const std::string& path) { as_folder ? folder(path) : file(path); };
    for (const auto& h : homes_) {
      add(h + relative);
    }
    const std::string_view place(relative);
    for (const auto& [prefix, name] : kXdgFolders) {
      if (place.starts_with(prefix)) {
        if (const std::string moved = from(name); !moved.empty()) {
          add(moved + "/" + std::string(place.substr(std::string_view(prefix).size())));
        }
      }
    }
  }

  const std::vector<std::string>& homes() const { return homes_; }

  std::vector<std::string> folders;
  std::vector<std::string> files;

 private:
  const std::vector<std::string>& homes_;
  const std::vector<std::string>& environment_;
};

// The stores at their usual places in the homes (and where the XDG variables move them).
void add_home_stores(Candidates& candidates, bool macos) {
  for (const char* name : kCredentialFolders) {
    candidates.in_homes(name, true);
  }
  for (const char* name : kMoreCredentialFolders) {
    candidates.in_homes(name, true);
  }
  for (const char* name : kCredentialFiles) {
    candidates.in_homes(name, false);
  }
  for (const char* name : kMoreCredentialFiles) {
    candidates.in_homes(name, false);
  }
  if (macos) {
    for (const auto& h : candidates.homes()) {
      for (const char* name : kMacosFolders) {
        candidates.folder(h + name);
      }
    }
  }
}

// The stores where the tools' variables move them.
void add_moved_stores(Candidates& candidates) {
  candidates.file(candidates.from("NPM_CONFIG_USERCONFIG"));
  candidates.file(candidates.from("GOOGLE_APPLICATION_CREDENTIALS"));
  candidates.file(candidates.from("HF_TOKEN_PATH"));
  candidates.file(candidates.from("AWS_SHARED_CREDENTIALS_FILE"));
  candidates.file(candidates.from("AWS_CONFIG_FILE"));
  candidates.folder(candidates.from("CLOUDSDK_CONFIG"));
  candidates.folder(candidates.from("AZURE_CONFIG_DIR"));
  if (const std::string list = candidates.from("KUBECONFIG"); !list.empty()) {
    for (std::size_t at = 0; at <= list.size();) {
      const std::size_t end = std::min(list.find(':', at), list.size());
      candidates.file(list.substr(at, end - at));
      at = end + 1;
    }
  }
  if (const std::string docker = candidates.from("DOCKER_CONFIG"); !docker.empty()) {
    candidates.file(docker + "/config.json");
  }
  if (const std::string gnupg = candidates.from("GNUPGHOME"); !gnupg.empty()) {
    candidates.folder(gnupg + "/private-keys-v1.d");
  }
  candidates.folder(candidates.from("PASSWORD_STORE_DIR"));
  if (const std::string gh = candidates.from("GH_CONFIG_DIR"); !gh.empty()) {
    candidates.file(gh + "/hosts.yml");
  }
  candidates.file(candidates.from("NETRC"));
  if (const std::string cargo = candidates.from("CARGO_HOME"); !cargo.empty()) {
    candidates.file(cargo + "/credentials");
    candidates.file(cargo + "/credentials.toml");
  }
  candidates.file(candidates.from("TF_CLI_CONFIG_FILE"));
  candidates.file(candidates.from("VAULT_CONFIG_PATH"));
  for (const auto& [name, store] : kFilesInVariableFolders) {
    if (const std::string moved = candidates.from(name); !moved.empty()) {
      candidates.file(moved + store);
    }
  }
  for (const char* name : kFileVariables) {
    candidates.file(candidates.from(name));
  }
}

// Whether `store` is an --allow-read path (resolved) or lies inside one.
bool opened(const std::string& store, const std::vector<std::string>& allow_reads) {
  return std::any_of(allow_reads.begin(), allow_reads.end(), [&](const std::string& allowed) {
    return store == allowed || inside(store, allowed);
  });
}

bool in_hidden_folder(const std::string& path, const CredentialStores& stores) {
  return std::any_of(stores.folders.begin(), stores.folders.end(),
                     [&](const std::string& f) { return inside(path, f); });
}

// ~/.ssh of each home: hidden but for what ssh may read.
void hide_ssh(const std::vector<std::string>& homes, const std::vector<std::string>& allow_reads,
              CredentialStores& out) {
  std::error_code ec;
  for (const auto& h : homes) {
    const std::string ssh = resolved_path(h + "/.ssh");
    if (!fs::is_directory(ssh, ec) || opened(ssh, allow_reads) ||
        std::find(out.folders.begin(), out.folders.end(), ssh) != out.folders.end()) {
      continue;
    }
    out.folders.push_back(ssh);
    ssh_shown(ssh, out.shown);
  }
}

// The candidates of one kind that exist as it, less duplicates, what a hidden folder already
// covers and what --allow-read opens.
template <typename IsKind>
void keep(std::vector<std::string>& candidates, IsKind is_kind,
          const std::vector<std::string>& allow_reads, const CredentialStores& stores,
          std::vector<std::string>& into) {
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (const auto& path : candidates) {
    if (!in_hidden_folder(path, stores) && !opened(path, allow_reads) && is_kind(path)) {
      into.push_back(path);
    }
  }
}

}  // namespace

CredentialStores credential_stores(const std::vector<std::string>& homes,
                                   const std::vector<std::string>& environment,
                                   const std::vector<std::string>& allow_reads, bool macos) {
  Candidates candidates(homes, environment);
  add_home_stores(candidates, macos);
  add_moved_stores(candidates);

  CredentialStores out;
  hide_ssh(homes, allow_reads, out);
  // Folders first: a file inside one needs no mount of its own.
  std::error_code ec;
  keep(
      candidates.folders, [&](const std::string& path) { return fs::is_directory(path, ec); },
      allow_reads, out, out.folders);
  keep(
      candidates.files, [&](const std::string& path) { return fs::is_regular_file(path, ec); },
      allow_reads, out, out.files);
  // An --allow-read path inside a hidden folder is shown in it.
  for (const auto& allowed : allow_reads) {
    if (in_hidden_folder(allowed, out) && fs::exists(allowed, ec) &&
        std::find(out.shown.begin(), out.shown.end(), allowed) == out.shown.end()) {
      out.shown.push_back(allowed);
    }
  }
  std::sort(out.shown.begin(), out.shown.end());
  return out;
}

void add_gate_secrets(CredentialStores& stores, const std::vector<std::string>& files) {
  std::error_code ec;
  for (const auto& given : files) {
    const std::string path = resolved_path(given);
    if (!given.empty() && fs::is_regular_file(path, ec) &&
        std::find(stores.files.begin(), stores.files.end(), path) == stores.files.end()) {
      stores.files.push_back(path);
    }
  }
}

}  // namespace sandgate::sandbox
