; Inno Setup script: a per-user installer for the PyInstaller folder bundle (dist\mnemo).
; Built by .github/workflows/platforms.yml: iscc /DVersion=X.Y.Z packaging\windows\mnemo.iss
; No admin rights: installs under %LOCALAPPDATA%\Programs\Mnemo; data stays in the user's
; folders (platformdirs) and is kept on uninstall.
#ifndef Version
  #define Version "0.0.0"
#endif

[Setup]
AppId={{6B0F3C1E-2D4A-4C8E-9F1B-4D2E7A9C5B10}
AppName=Mnemo
AppVersion={#Version}
AppPublisher=Mnemo developers
DefaultDirName={localappdata}\Programs\Mnemo
DefaultGroupName=Mnemo
PrivilegesRequired=lowest
OutputDir=..\..\dist
OutputBaseFilename=mnemo-{#Version}-windows-setup
Compression=lzma2
SolidCompression=yes
ArchitecturesInstallIn64BitMode=x64compatible
ChangesEnvironment=yes

[Files]
Source: "..\..\dist\mnemo\*"; DestDir: "{app}"; Flags: recursesubdirs ignoreversion

[Icons]
Name: "{group}\Mnemo"; Filename: "{app}\mnemo-tray.exe"
Name: "{group}\Mnemo manager"; Filename: "{app}\mnemo-tray.exe"; Parameters: "manager"
Name: "{userstartup}\Mnemo"; Filename: "{app}\mnemo-tray.exe"; Tasks: startup

[Tasks]
Name: startup; Description: "Start Mnemo when I log in"; Flags: unchecked

[Registry]
; mnemo on the user's PATH, for the command line and the MCP server
Root: HKCU; Subkey: "Environment"; ValueType: expandsz; ValueName: "Path"; ValueData: "{olddata};{app}"; Check: NeedsAddPath(ExpandConstant('{app}'))

[Run]
Filename: "{app}\mnemo-tray.exe"; Description: "Start Mnemo"; Flags: nowait postinstall skipifsilent

[Code]
function NeedsAddPath(Param: string): boolean;
var
  OrigPath: string;
begin
  if not RegQueryStringValue(HKEY_CURRENT_USER, 'Environment', 'Path', OrigPath) then
  begin
    Result := True;
    exit;
  end;
  Result := Pos(';' + Uppercase(Param) + ';', ';' + Uppercase(OrigPath) + ';') = 0;
end;
