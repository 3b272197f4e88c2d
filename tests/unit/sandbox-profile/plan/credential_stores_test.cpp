// The credential stores `run` hides (sandbox-profile/plan/credential_stores.hpp), against a
// scratch home: what is hidden whole, file by file, what ssh keeps, the variables that move
// stores, and what --allow-read opens.
#include "sandbox-profile/plan/credential_stores.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

bool has(const std::vector<std::string>& paths, const std::string& path) {
  return std::find(paths.begin(), paths.end(), path) != paths.end();
}

class CredentialStoresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::string(::testing::TempDir()) + "/stores-XXXXXX";
    ASSERT_NE(::mkdtemp(home_.data()), nullptr);
    home_ = fs::canonical(home_).string();
  }
  void TearDown() override { fs::remove_all(home_); }
  // Makes `relative` under the home, a file unless it ends with '/'.
  std::string make(const std::string& relative) {
    const std::string path = home_ + "/" + relative;
    if (relative.ends_with('/')) {
      fs::create_directories(path);
      return path.substr(0, path.size() - 1);
    }
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << "secret\n";
    return path;
  }
  std::string home_;
};

TEST_F(CredentialStoresTest, FoldersWholeFilesOneByOneAndOnlyWhatExists) {
  const std::string aws = make(".aws/");
  make(".aws/credentials");
  const std::string kube = make(".kube/");
  const std::string keys = make(".gnupg/private-keys-v1.d/");
  const std::string gnupg_conf = make(".gnupg/gpg.conf");
  const std::string netrc = make(".netrc");
  const std::string docker = make(".docker/config.json");
  const std::string docker_other = make(".docker/contexts/meta/x");
  const std::string cargo = make(".cargo/credentials.toml");
  const std::string cargo_bin = make(".cargo/bin/tool");
  const std::string gh = make(".config/gh/hosts.yml");
  const std::string browser = make(".config/google-chrome/");
  const auto stores = credential_stores({home_}, {}, {}, false);
  for (const auto& folder : {aws, kube, keys, browser}) {
    EXPECT_TRUE(has(stores.folders, folder)) << folder;
  }
  for (const auto& file : {netrc, docker, cargo, gh}) {
    EXPECT_TRUE(has(stores.files, file)) << file;
  }
  // What lives beside them stays.
  for (const auto& kept : {gnupg_conf, docker_other, cargo_bin, home_ + "/.cargo"}) {
    EXPECT_FALSE(has(stores.files, kept) || has(stores.folders, kept)) << kept;
  }
  // What does not exist is not planned (nothing to mount over), on Linux and macOS alike.
  EXPECT_FALSE(has(stores.folders, home_ + "/.azure"));
  EXPECT_FALSE(has(stores.files, home_ + "/.pypirc"));
  EXPECT_FALSE(has(stores.folders, home_ + "/Library/Keychains"));
  make("Library/Keychains/");
  EXPECT_FALSE(
      has(credential_stores({home_}, {}, {}, false).folders, home_ + "/Library/Keychains"));
  EXPECT_TRUE(has(credential_stores({home_}, {}, {}, true).folders, home_ + "/Library/Keychains"));
}

TEST_F(CredentialStoresTest, SshKeepsWhatHoldsNoSecretAndHidesTheRest) {
  const std::string ssh = make(".ssh/");
  const std::string key = make(".ssh/id_ed25519");
  const std::string odd_key = make(".ssh/work-key");
  const std::string pub = make(".ssh/id_ed25519.pub");
  const std::string known = make(".ssh/known_hosts");
  const std::string known_old = make(".ssh/known_hosts.old");
  const std::string config = make(".ssh/config");
  const std::string included = make(".ssh/config.d/work");
  const std::string nested = make(".ssh/config.d/clients/acme");
  const std::string authorized = make(".ssh/authorized_keys");
  const auto stores = credential_stores({home_}, {}, {}, false);
  EXPECT_TRUE(has(stores.folders, ssh));
  for (const auto& shown : {pub, known, known_old, config, included, nested, authorized}) {
    EXPECT_TRUE(has(stores.shown, shown)) << shown;
  }
  // config.d is shown file by file, not as a folder.
  EXPECT_FALSE(has(stores.shown, home_ + "/.ssh/config.d"));
  // An allow-list: a key by any name stays hidden.
  EXPECT_FALSE(has(stores.shown, key));
  EXPECT_FALSE(has(stores.shown, odd_key));
}

// ssh's allow-list takes no link (one could lead into another store), no private key named
// like a public one, and the passwd entry's home is searched as well as $HOME.
TEST_F(CredentialStoresTest, SshShowsNoLinkNorADisguisedKeyAndEveryHomeIsSearched) {
  make(".aws/credentials");
  const std::string ssh = make(".ssh/");
  const std::string link = home_ + "/.ssh/known_hosts2";
  fs::create_symlink(home_ + "/.aws/credentials", link);
  const std::string disguised = home_ + "/.ssh/id_work.pub";
  std::ofstream(disguised) << "-----BEGIN OPENSSH PRIVATE KEY-----\n";
  const std::string real_pub = home_ + "/.ssh/id_ed25519.pub";
  std::ofstream(real_pub) << "ssh-ed25519 AAAA ada@host\n";
  const std::string other = make("other-home/");
  const std::string other_aws = make("other-home/.aws/");
  const std::string other_key = make("other-home/.ssh/id_rsa");
  const std::string other_npmrc = make("other-home/.npmrc");
  // Second review, finding 11: a key in config.d by any name, a hard link to a key named like
  // known_hosts, a .pub whose key comes after a first line, a PuTTY key: all hidden.
  const std::string key = home_ + "/.ssh/id_ed25519";
  std::ofstream(key) << "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n";
  const std::string hard = home_ + "/.ssh/known_hosts";
  fs::create_hard_link(key, hard);
  fs::create_directories(home_ + "/.ssh/config.d");
  const std::string in_config_d = home_ + "/.ssh/config.d/deploy.key";
  std::ofstream(in_config_d) << "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n";
  const std::string putty = home_ + "/.ssh/config.d/work.ppk";
  std::ofstream(putty) << "PuTTY-User-Key-File-3: ssh-ed25519\n";
  const std::string config_d_ok = home_ + "/.ssh/config.d/hosts";
  std::ofstream(config_d_ok) << "Host work\n  User ada\n";
  const std::string second_line = home_ + "/.ssh/backup.pub";
  std::ofstream(second_line) << "ssh-ed25519 AAAA ada@host\n-----BEGIN OPENSSH PRIVATE KEY-----\n";
  const auto stores = credential_stores({home_, other}, {}, {}, false);
  EXPECT_FALSE(has(stores.shown, link));
  EXPECT_FALSE(has(stores.shown, disguised));
  EXPECT_TRUE(has(stores.shown, real_pub));
  for (const auto& hidden : {hard, in_config_d, putty, second_line}) {
    EXPECT_FALSE(has(stores.shown, hidden)) << hidden;
  }
  EXPECT_TRUE(has(stores.shown, config_d_ok));
  EXPECT_TRUE(has(stores.folders, other_aws));
  EXPECT_TRUE(has(stores.folders, other + "/.ssh"));
  EXPECT_TRUE(has(stores.files, other_npmrc));
  // The gate's own keys, whatever --allow-read says.
  const std::string token = make("gate/admin-token");
  auto opened = credential_stores({home_}, {}, {home_}, false);
  add_gate_secrets(opened, {token, home_ + "/gate/absent"});
  EXPECT_EQ(opened.files, std::vector<std::string>{token});
}

TEST_F(CredentialStoresTest, TheVariablesThatMoveStoresAreFollowed) {
  const std::string credentials = make("elsewhere/aws-credentials");
  const std::string kube_a = make("elsewhere/kube-a");
  const std::string kube_b = make("elsewhere/kube-b");
  const std::string docker = make("elsewhere/docker/config.json");
  const std::string gnupg = make("elsewhere/gnupg/private-keys-v1.d/");
  const std::string gcloud = make("elsewhere/gcloud/");
  const std::string netrc = make("elsewhere/netrc");
  const std::string cargo = make("elsewhere/cargo/credentials");
  const std::string google = make("elsewhere/adc.json");
  const std::string xdg_gh = make("xdg/gh/hosts.yml");
  const auto stores = credential_stores(
      {home_},
      {"GOOGLE_APPLICATION_CREDENTIALS=" + google, "XDG_CONFIG_HOME=" + home_ + "/xdg",
       "AWS_SHARED_CREDENTIALS_FILE=" + credentials, "KUBECONFIG=" + kube_a + ":" + kube_b,
       "DOCKER_CONFIG=" + home_ + "/elsewhere/docker", "GNUPGHOME=" + home_ + "/elsewhere/gnupg",
       "CLOUDSDK_CONFIG=" + gcloud, "NETRC=" + netrc, "CARGO_HOME=" + home_ + "/elsewhere/cargo",
       "PATH=/usr/bin"},
      {}, false);
  for (const auto& file : {credentials, kube_a, kube_b, docker, netrc, cargo, google, xdg_gh}) {
    EXPECT_TRUE(has(stores.files, file)) << file;
  }
  for (const auto& folder : {gnupg, gcloud}) {
    EXPECT_TRUE(has(stores.folders, folder)) << folder;
  }
  // Written with `~`, `$HOME` or `${VAR}`, as the tools expand them themselves (second review,
  // finding 12).
  const std::string tilde = make("creds/aws");
  const std::string dollar = make("creds/aws-config");
  const std::string braced = make("creds/kube");
  const auto expanded = credential_stores(
      {home_},
      {"AWS_SHARED_CREDENTIALS_FILE=~/creds/aws", "AWS_CONFIG_FILE=$HOME/creds/aws-config",
       "KUBECONFIG=${CREDS}/kube", "HOME=" + home_, "CREDS=" + home_ + "/creds"},
      {}, false);
  for (const auto& file : {tilde, dollar, braced}) {
    EXPECT_TRUE(has(expanded.files, file)) << file;
  }
}

TEST_F(CredentialStoresTest, AllowReadOpensAStoreOrShowsAPathInsideOne) {
  const std::string aws = make(".aws/");
  const std::string aws_config = make(".aws/config");
  make(".aws/credentials");
  const std::string kube = make(".kube/");
  const std::string netrc = make(".netrc");
  const std::string ssh = make(".ssh/");
  make(".ssh/id_rsa");
  const auto stores = credential_stores({home_}, {}, {aws_config, kube, netrc, ssh}, false);
  EXPECT_TRUE(has(stores.folders, aws));  // still hidden, but for its config
  EXPECT_TRUE(has(stores.shown, aws_config));
  EXPECT_FALSE(has(stores.folders, kube));
  EXPECT_FALSE(has(stores.files, netrc));
  EXPECT_FALSE(has(stores.folders, ssh));
  // A folder given opens every store inside it: the home opens all.
  const auto all = credential_stores({home_}, {}, {home_}, false);
  EXPECT_TRUE(all.folders.empty() && all.files.empty());
}

// Agents' logins and the stores of other well-known tools (the hostile review's list, and their
// class): hidden file by file, beside the settings the tools still read; and where their
// variables move them.
TEST_F(CredentialStoresTest, AgentsAndOtherToolsLoginsAreHidden) {
  std::vector<std::string> expected_files;
  for (const char* relative :
       {".codex/auth.json", ".gemini/oauth_creds.json", ".config/github-copilot/apps.json",
        ".config/glab-cli/config.yml", ".gem/credentials", ".m2/settings.xml",
        ".gradle/gradle.properties", ".config/composer/auth.json", ".config/doctl/config.yaml",
        ".s3cfg", ".boto", ".my.cnf", ".config/hub", ".databrickscfg", ".fly/config.yml",
        ".pulumi/credentials.json", ".claude/.credentials.json", ".yarnrc.yml"}) {
    expected_files.push_back(make(relative));
  }
  const std::string oci = make(".oci/");
  make(".oci/config");
  const std::string codex_settings = make(".codex/config.toml");
  const std::string gemini_settings = make(".gemini/settings.json");
  const std::string maven_repository = make(".m2/repository/x.jar");
  const auto stores = credential_stores({home_}, {}, {}, false);
  for (const auto& file : expected_files) {
    EXPECT_TRUE(has(stores.files, file)) << file;
  }
  EXPECT_TRUE(has(stores.folders, oci));
  for (const auto& kept : {codex_settings, gemini_settings, maven_repository}) {
    EXPECT_FALSE(has(stores.files, kept)) << kept;
  }
  // Moved by their variables.
  const std::string codex_home = make("elsewhere/codex/auth.json");
  const std::string s3cmd = make("elsewhere/s3cmd.cfg");
  const std::string gradle = make("elsewhere/gradle/gradle.properties");
  const std::string pgpass = make("elsewhere/pgpass");
  const auto moved =
      credential_stores({home_},
                        {"CODEX_HOME=" + home_ + "/elsewhere/codex", "S3CMD_CONFIG=" + s3cmd,
                         "GRADLE_USER_HOME=~/elsewhere/gradle", "PGPASSFILE=" + pgpass},
                        {}, false);
  for (const auto& file : {codex_home, s3cmd, gradle, pgpass}) {
    EXPECT_TRUE(has(moved.files, file)) << file;
  }
}

// Third review, finding 4: registries' logins and index settings, platforms' CLIs, agents' keys
// and the histories of shells and REPLs (they hold pasted tokens), file by file; svn's cached
// passwords, cloudflared's, atuin's and sandgate's own run logs as folders; and where the XDG
// variables and the tools' own variables move them.
TEST_F(CredentialStoresTest, RegistriesPlatformsAgentsAndHistoriesAreHidden) {
  std::vector<std::string> expected_files;
  for (const char* relative : {".config/containers/auth.json",
                               ".config/helm/registry/config.json",
                               ".bundle/config",
                               ".config/pip/pip.conf",
                               ".pip/pip.conf",
                               ".condarc",
                               ".nuget/NuGet/NuGet.Config",
                               ".sbt/credentials",
                               ".ivy2/.credentials",
                               ".hgrc",
                               ".mc/config.json",
                               ".passwd-s3fs",
                               ".config/stripe/config.toml",
                               ".config/hcloud/cli.toml",
                               ".railway/config.json",
                               ".talos/config",
                               ".circleci/cli.yml",
                               ".ngrok2/ngrok.yml",
                               ".wakatime.cfg",
                               ".local/share/opencode/auth.json",
                               ".config/goose/secrets.yaml",
                               ".config/io.datasette.llm/keys.json",
                               ".claude.json",
                               ".aider.conf.yml",
                               ".env",
                               ".bash_history",
                               ".zsh_history",
                               ".psql_history",
                               ".mysql_history",
                               ".python_history",
                               ".node_repl_history",
                               ".local/share/fish/fish_history"}) {
    expected_files.push_back(make(relative));
  }
  std::vector<std::string> expected_folders;
  for (const char* relative : {".subversion/auth/", ".cloudflared/", ".local/share/atuin/",
                               ".local/state/sandgate/runs/"}) {
    expected_folders.push_back(make(relative));
  }
  make(".subversion/auth/svn.simple/0123abcd");
  make(".local/share/atuin/key");
  // What lives beside them stays: svn's settings, goose's and helm's settings, the state of
  // other tools.
  const std::vector<std::string> kept = {
      make(".subversion/config"), make(".config/goose/config.yaml"),
      make(".config/helm/repositories.lock"), make(".local/state/other/x"),
      make(".config/containers/registries.conf")};
  const auto stores = credential_stores({home_}, {}, {}, false);
  for (const auto& file : expected_files) {
    EXPECT_TRUE(has(stores.files, file)) << file;
  }
  for (const auto& folder : expected_folders) {
    EXPECT_TRUE(has(stores.folders, folder)) << folder;
  }
  for (const auto& path : kept) {
    EXPECT_FALSE(has(stores.files, path) || has(stores.folders, path)) << path;
  }
  EXPECT_FALSE(has(stores.folders, home_ + "/.subversion"));

  // Moved: the XDG variables move every store under ~/.config, ~/.local/share and
  // ~/.local/state (older entries too); the tools' variables name a file or its folder.
  const std::string xdg_podman = make("xdg-config/containers/auth.json");
  const std::string xdg_copilot = make("xdg-config/github-copilot/hosts.json");
  const std::string xdg_browser = make("xdg-config/chromium/");
  const std::string xdg_opencode = make("xdg-data/opencode/auth.json");
  const std::string xdg_runs = make("xdg-state/sandgate/runs/");
  const std::string histfile = make("elsewhere/history");
  const std::string pip = make("elsewhere/pip.ini");
  const std::string condarc = make("elsewhere/condarc");
  const std::string registry_auth = make("elsewhere/auth.json");
  const std::string llm = make("elsewhere/llm/keys.json");
  const std::string wakatime = make("elsewhere/wakatime/.wakatime.cfg");
  const std::string psql = make("elsewhere/psql_history");
  const auto moved = credential_stores(
      {home_},
      {"XDG_CONFIG_HOME=" + home_ + "/xdg-config", "XDG_DATA_HOME=~/xdg-data",
       "XDG_STATE_HOME=" + home_ + "/xdg-state", "HISTFILE=" + histfile, "PIP_CONFIG_FILE=" + pip,
       "CONDARC=" + condarc, "REGISTRY_AUTH_FILE=" + registry_auth,
       "LLM_USER_PATH=" + home_ + "/elsewhere/llm",
       "WAKATIME_HOME=" + home_ + "/elsewhere/wakatime", "PSQL_HISTORY=" + psql,
       "PIP_CONFIG_FILE_UNRELATED=/nowhere"},
      {}, false);
  for (const auto& file : {xdg_podman, xdg_copilot, xdg_opencode, histfile, pip, condarc,
                           registry_auth, llm, wakatime, psql}) {
    EXPECT_TRUE(has(moved.files, file)) << file;
  }
  for (const auto& folder : {xdg_browser, xdg_runs}) {
    EXPECT_TRUE(has(moved.folders, folder)) << folder;
  }
  // --allow-read gives one back (Claude Code's settings, say).
  const auto opened = credential_stores({home_}, {}, {home_ + "/.claude.json"}, false);
  EXPECT_FALSE(has(opened.files, home_ + "/.claude.json"));
  EXPECT_TRUE(has(opened.files, home_ + "/.bash_history"));
}

}  // namespace
}  // namespace sandgate::sandbox
