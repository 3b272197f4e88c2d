// Places only macOS has that the Seatbelt profile names: the user's data that no command needs
// to read (mail, messages, browsers' stores, address book, ...) and the places whose contents
// the system starts or runs later on its own (launchd agents and daemons, login items). Shared
// places of both systems (the protected paths, the credential stores) live in plan/.
#pragma once

#include <string>
#include <vector>

#include "sandbox-profile/plan/protected_paths.hpp"

namespace sandgate::sandbox {

// Folders in the home neither read nor written: what a terminal with Full Disk Access would
// otherwise pass on to the command. Kept to folders that hold the user's messages, mail,
// contacts, browsing, accounts and passwords, and nothing a build or a developer tool reads.
// ~/Library/Keychains and ~/Library/Cookies are credential stores (plan/credential_stores.hpp),
// hidden there so that --allow-read can open them; these cannot be opened.
inline constexpr const char* kMacosHiddenFolders[] = {
    "/Library/Messages",
    "/Library/Mail",
    "/Library/Safari",
    "/Library/Accounts",
    "/Library/Calendars",
    "/Library/HTTPStorages",
    "/Library/IdentityServices",
    "/Library/Suggestions",
    "/Library/Application Support/AddressBook",
    "/Library/Application Support/CallHistoryDB",
    "/Library/Application Support/Knowledge",
    "/Library/Application Support/MobileSync",
    "/Library/Application Support/com.apple.TCC",
    "/Library/Containers/com.apple.mail",
    "/Library/Containers/com.apple.Safari",
    "/Library/Containers/com.apple.Notes",
    "/Library/Containers/com.apple.iChat",
    "/Library/Group Containers/group.com.apple.notes",
    "/Library/Group Containers/group.com.apple.messages",
    "/Library/Group Containers/2BUA8C4S2C.com.1password",
    "/Library/Application Support/Slack",
};

// A place the system runs or loads by itself later: never written, whatever protect_files,
// the working folder or --allow-write say.
struct AutostartPlace {
  const char* path;  // below the home when it starts with "~", else absolute
  bool tree;         // the folder and everything below it
};

inline constexpr AutostartPlace kAutostartPlaces[] = {
    {"~/Library/LaunchAgents", true},  // launchd loads them at the next login
    // Login items and background items (ServiceManagement's database).
    {"~/Library/Application Support/com.apple.backgroundtaskmanagementagent", true},
    {"~/Library/Preferences/com.apple.loginitems.plist", false},
    {"~/Library/Preferences/loginwindow.plist", false},  // LoginHook, AutoLaunchedApplications
    {"~/Library/Preferences/com.apple.loginwindow.plist", false},
    {"/Library/LaunchAgents", true},
    {"/Library/LaunchDaemons", true},
    {"/Library/StartupItems", true},
    {"/Library/Preferences/com.apple.loginwindow.plist", false},
};

// kMacosHiddenFolders below `home` ("" or "/": none).
inline std::vector<std::string> macos_hidden_folders(const std::string& home) {
  std::vector<std::string> out;
  if (home.empty() || home == "/") {
    return out;
  }
  for (const char* folder : kMacosHiddenFolders) {
    out.push_back(home + folder);
  }
  return out;
}

// kAutostartPlaces, "~" made `home` (those below the home left out when it is "" or "/"); each
// protected always.
inline std::vector<ProtectedPath> autostart_places(const std::string& home) {
  std::vector<ProtectedPath> out;
  for (const auto& place : kAutostartPlaces) {
    const std::string path = place.path;
    if (path.starts_with("~")) {
      if (home.empty() || home == "/") {
        continue;
      }
      out.push_back({home + path.substr(1), place.tree, true});
    } else {
      out.push_back({path, place.tree, true});
    }
  }
  return out;
}

}  // namespace sandgate::sandbox
