#!/usr/bin/python3
# classroom/accounts.py - the accounts of a roster (classroom/roster.example.txt): each missing
# one is made with a home of its own (mode 0700) and a first-login password printed once.
#
# usage: classroom/accounts.py ROSTER [--remove]   (as root; --remove deletes accounts and homes)
# A password is printed to the terminal and nowhere else: not stored, not logged. A student changes
# it in a terminal of their server (New > Terminal, then `passwd`). An account that exists keeps
# its password and files.
import os
import pwd
import re
import secrets
import string
import subprocess
import sys

NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


def read_roster(path):
    people = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            extra = [w for w in words[1:] if w not in ("en", "zh", "teacher")]
            if not NAME.match(words[0]) or extra:
                sys.exit(f"accounts.py: {path}:{number}: '{line.strip()}' is not 'name [en|zh] [teacher]'")
            people.append((words[0], "teacher" in words[1:]))
    return people


def exists(user):
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False


def password():
    # 12 characters without look-alikes (0/O, 1/l/I): about 68 bits, typed from a sheet of paper
    alphabet = "".join(ch for ch in string.ascii_letters + string.digits if ch not in "0O1lI")
    return "".join(secrets.choice(alphabet) for _ in range(12))


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: classroom/accounts.py ROSTER [--remove]")
    if os.geteuid() != 0:
        sys.exit("accounts.py: making accounts needs root (sudo make classroom)")
    people = read_roster(sys.argv[1])
    if "--remove" in sys.argv[2:]:
        for user, _ in people:
            if exists(user):
                subprocess.run(["userdel", "-r", user], check=False, stderr=subprocess.DEVNULL)
                print(f"removed {user}")
        return
    made = []
    for user, teacher in people:
        if exists(user):
            continue
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", user], check=True)
        home = pwd.getpwnam(user).pw_dir
        os.chmod(home, 0o700)          # one student cannot read another's notebooks or answers
        secret = password()
        subprocess.run(["chpasswd"], input=f"{user}:{secret}\n", text=True, check=True)
        made.append((user, teacher, secret))
    if made:
        print("new accounts and their first passwords (shown this once, stored nowhere):")
        for user, teacher, secret in made:
            print(f"  {user:<16} {secret}{'   (teacher, admin)' if teacher else ''}")
    print(f"{len(people)} people in the roster, {len(made)} new accounts")


if __name__ == "__main__":
    main()
