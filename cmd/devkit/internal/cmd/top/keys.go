package top

import "github.com/charmbracelet/bubbles/key"

// keyMap is every key of the view; the help screen is rendered from it,
// so a key cannot be missing from the help.
type keyMap struct {
	Up, Down, Left, Right     key.Binding
	Filter, Enter, Back, Help key.Binding
	Restart, Stop, Start      key.Binding
	Reload, Quit              key.Binding
	Yes, No                   key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Up:      key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:    key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		Left:    key.NewBinding(key.WithKeys("h", "left", "shift+tab"), key.WithHelp("h/←", "processes pane")),
		Right:   key.NewBinding(key.WithKeys("l", "right", "tab"), key.WithHelp("l/→/tab", "log pane")),
		Filter:  key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter the pane")),
		Enter:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "full-screen log")),
		Back:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Restart: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "restart")),
		Stop:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "stop")),
		Start:   key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "start")),
		Reload:  key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "reload (plan first)")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Yes:     key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "confirm")),
		No:      key.NewBinding(key.WithKeys("n", "esc"), key.WithHelp("n/esc", "cancel")),
	}
}

// ShortHelp is the footer's line.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Filter, k.Enter, k.Restart, k.Quit}
}

// FullHelp is the help screen, in columns.
func (k keyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Up, k.Down, k.Left, k.Right},
		{k.Filter, k.Enter, k.Back, k.Help},
		{k.Restart, k.Stop, k.Start, k.Reload},
		{k.Yes, k.No, k.Quit},
	}
}
